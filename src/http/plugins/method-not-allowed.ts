import type { FastifyInstance } from "fastify";
import { AppError } from "../../lib/app-error.ts";

/** The methods each declared path answers, for telling 405 from 404. */
export interface RouteMethods {
  /** The methods routed for `path` (a request path, no query), or null when no route has it. */
  methodsFor(path: string): string[] | null;
}

interface Pattern {
  regex: RegExp;
  methods: Set<string>;
  /** A URL without parameters: the path is exactly this route's. */
  isStatic: boolean;
}

// A static segment's characters taken literally; a `:name` parameter is one non-empty segment,
// as Fastify's router (find-my-way) matches it.
const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const PARAM = /:[A-Za-z0-9_]+/g;

/**
 * The regex of a route URL, or null for the ones left out: wildcards (`/assets/*`, `/docs/*`),
 * whose paths exist only if a file does, so another method there stays a 404; and regex or
 * multi-parameter segments, which no route of ours uses.
 */
function patternOf(url: string): RegExp | null {
  if (url.includes("*") || url.includes("(") || url.includes("::")) return null;
  const segments = url.split("/");
  if (segments.some((s) => (s.match(PARAM)?.length ?? 0) > 1)) return null;
  const source = segments
    .map((s) => {
      const param = s.match(PARAM)?.[0];
      if (!param) return escapeRegex(s);
      const at = s.indexOf(param);
      return `${escapeRegex(s.slice(0, at))}[^/]+${escapeRegex(s.slice(at + param.length))}`;
    })
    .join("/");
  return new RegExp(`^${source}$`);
}

/** The router decodes a path before matching it (keeping %2F and the like encoded); so do we. */
function decodedPath(path: string): string {
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}

/**
 * Records every route registered after it (an onRoute hook: call it before the routes). HEAD is
 * added wherever GET is, as Fastify answers HEAD for every GET route.
 */
export function collectRouteMethods(app: FastifyInstance): RouteMethods {
  const byUrl = new Map<string, Pattern>();
  app.addHook("onRoute", (route) => {
    const regex = patternOf(route.url);
    if (!regex) return;
    const entry = byUrl.get(route.url) ?? {
      regex,
      methods: new Set<string>(),
      isStatic: !route.url.includes(":"),
    };
    for (const m of [route.method].flat()) entry.methods.add(m.toUpperCase());
    if (entry.methods.has("GET")) entry.methods.add("HEAD");
    byUrl.set(route.url, entry);
  });
  return {
    methodsFor(path) {
      const decoded = decodedPath(path);
      const matching = [...byUrl.values()].filter(({ regex }) => regex.test(decoded));
      // A path declared as such (`/api/v1/tasks/quote`) is that resource, not also an id of its
      // parametric sibling (`/api/v1/tasks/:id`): only its own methods are allowed on it.
      const own = matching.some((p) => p.isStatic) ? matching.filter((p) => p.isStatic) : matching;
      const methods = new Set(own.flatMap((p) => [...p.methods]));
      return methods.size > 0 ? [...methods].sort() : null;
    },
  };
}

/**
 * The answer for a request no route took: 405 METHOD_NOT_ALLOWED with `Allow` when its path is
 * declared for other methods (RFC 9110 §15.5.6: a client that guessed the method learns which
 * exist, instead of a 404 that says the path is wrong), else null (a 404).
 */
export function methodNotAllowed(routes: RouteMethods, method: string, path: string): AppError | null {
  const allowed = routes.methodsFor(path);
  if (!allowed || allowed.includes(method.toUpperCase())) return null;
  return new AppError(
    "METHOD_NOT_ALLOWED",
    `Method ${method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`,
    undefined,
    { headers: { allow: allowed.join(", ") } },
  );
}
