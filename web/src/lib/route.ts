// Hash → page, with no DOM or Preact: the router (router.ts) and the unit tests use it.
export type Route =
  | { page: "verify" }
  | { page: "lists" }
  | { page: "tasks" }
  | { page: "task"; id: string }
  | { page: "credits" }
  | { page: "keys" }
  | { page: "webhooks" }
  | { page: "operator" }
  | { page: "not-found"; path: string };

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, "").split("?")[0] ?? "";
  const decoded = decodePath(raw);
  // `#/%` or `#/%E0%A4%A`: decodeURIComponent throws URIError, which would blank the whole app.
  if (decoded === null) return { page: "not-found", path: raw };
  const path = decoded.replace(/\/+$/, "") || "/";
  const task = /^\/tasks\/([0-9a-fA-F-]{36})$/.exec(path);
  if (task) return { page: "task", id: task[1]!.toLowerCase() };
  switch (path) {
    case "/":
    case "/verify":
      return { page: "verify" };
    case "/lists":
      return { page: "lists" };
    case "/tasks":
      return { page: "tasks" };
    case "/credits":
      return { page: "credits" };
    case "/keys":
      return { page: "keys" };
    case "/webhooks":
      return { page: "webhooks" };
    case "/operator":
      return { page: "operator" };
    default:
      return { page: "not-found", path };
  }
}

function decodePath(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

/**
 * The token of a sign-in link's address (`#/sign-in?link=mpl_…`, auth/sign-in-links.ts
 * signInLinkUrl), or null for any other hash. The token rides in the fragment so that no server
 * sees it (access logs, Referer); web/src/sign-in-link.ts strips it from the address bar.
 */
export function signInLinkToken(hash: string): string | null {
  const m = /^#?\/sign-in\/?\?(.*)$/.exec(hash);
  if (!m) return null;
  return new URLSearchParams(m[1]).get("link") || null;
}
