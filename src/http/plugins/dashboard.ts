import { stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyPluginAsync, FastifyReply } from "fastify";

/**
 * The dashboard's build (`npm run build:web`, also run by `npm ci` through `prepare`). Resolved
 * from this module's URL: src/http/plugins/ (run through tsx) and dist/http/plugins/ (`npm run
 * build`) are both three levels below the package root.
 */
export const DASHBOARD_DIST_DIR = fileURLToPath(new URL("../../../web/dist/", import.meta.url));

export interface DashboardOptions {
  /** Folder holding index.html and assets/; tests point it at an empty folder. */
  distDir?: string;
}

/**
 * Same-origin only: the bundle, its stylesheet and the API. Chart.js draws on a canvas and sizes
 * it through the CSSOM (element.style), which `style-src 'self'` allows; Preact sets styles the
 * same way. `blob:` in img-src is nothing but the object URLs of downloads, never fetched by the
 * page; `data:` covers the SVG favicon Vite may inline.
 */
const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
} as const;

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mailprobe: dashboard not built</title></head>
<body><h1>Dashboard not built</h1>
<p>The web dashboard has not been built on this server: run <code>npm run build:web</code>
(<code>npm ci</code> does it too) and reload. The API under <code>/api/v1</code> works without it.</p>
</body></html>
`;

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Serves web/dist at `/` (DESIGN.md §2: the dashboard comes with `serve`): index.html at `/`
 * with `no-cache`, the hashed bundle under `/assets/` with a year-long immutable cache. Only
 * these two routes exist, so every other path (unknown `/api/...` included) still reaches the
 * JSON 404 envelope. A missing build answers 503 with what to run, checked per request so a
 * build made while the server runs is picked up without a restart.
 */
export const dashboardPlugin: FastifyPluginAsync<DashboardOptions> = async (app, opts) => {
  const distDir = opts.distDir ?? DASHBOARD_DIST_DIR;
  const indexFile = join(distDir, "index.html");

  // Encapsulated (no fastify-plugin wrapper): these headers reach only the dashboard's routes.
  app.addHook("onSend", async (_req, reply: FastifyReply, payload) => {
    reply.headers(SECURITY_HEADERS);
    return payload;
  });

  await app.register(fastifyStatic, {
    root: join(distDir, "assets"),
    prefix: "/assets/",
    // The build writes .br/.gz twins of each asset; sent when the client accepts them.
    preCompressed: true,
    index: false,
    list: false,
    dotfiles: "ignore",
    maxAge: "365d",
    immutable: true,
    // A missing build is reported by `/`; unknown asset names fall through to the 404 envelope.
    suppressWarning: true,
  });

  // The folder itself is no page (@fastify/static would refuse it as a forbidden directory).
  app.get("/assets/", { schema: { hide: true } }, async (_req, reply) => reply.callNotFound());

  app.get("/", { schema: { hide: true } }, async (_req, reply) => {
    if (!(await isFile(indexFile))) {
      return reply
        .status(503)
        .header("content-type", "text/html; charset=utf-8")
        .header("cache-control", "no-store")
        .send(NOT_BUILT);
    }
    return reply.header("cache-control", "no-cache").sendFile("index.html", distDir, {
      cacheControl: false,
    });
  });
};
