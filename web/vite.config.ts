// The dashboard build: `npm run build:web` (and `npm ci`, through `prepare`) writes web/dist,
// which `mailprobe serve` serves at / (src/http/plugins/dashboard.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import preact from "@preact/preset-vite";
import { defineConfig, type Plugin } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

/**
 * Writes a .br and a .gz twin of every emitted asset so @fastify/static's `preCompressed` can
 * send them without compressing per request (and without a compression dependency).
 */
function precompress(): Plugin {
  let outDir = "";
  return {
    name: "mailprobe-precompress",
    apply: "build",
    configResolved(config) {
      outDir = config.build.outDir;
    },
    writeBundle(_options, bundle) {
      for (const name of Object.keys(bundle)) {
        if (!/\.(js|css|svg|json)$/.test(name)) continue;
        const file = join(outDir, name);
        const data = readFileSync(file);
        writeFileSync(`${file}.gz`, gzipSync(data, { level: 9 }));
        writeFileSync(
          `${file}.br`,
          brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
        );
      }
    },
  };
}

export default defineConfig({
  root: here,
  base: "/",
  // No public/ folder: everything the page loads is a hashed file under /assets/.
  publicDir: false,
  plugins: [preact({ prerender: { enabled: false } }), precompress()],
  resolve: {
    // The SDK's TypeScript sources, so the dashboard needs no SDK build step.
    alias: { "@mailprobe/client": join(here, "../sdk/src/index.ts") },
  },
  build: {
    outDir: join(here, "dist"),
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    // Inlined assets would be data: URLs; keep every asset a file so the CSP stays 'self'.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
  server: {
    port: 5173,
    // `npm run dev:web` against a running service (MAILPROBE_URL, default http://localhost:8080).
    proxy: { "/api": process.env.MAILPROBE_URL ?? "http://localhost:8080" },
  },
});
