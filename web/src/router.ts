// Hash routing (`#/tasks/…`): the server serves one index.html at `/` and needs no fallback.
import { useEffect, useState } from "preact/hooks";
import { parseHash, type Route } from "./lib/route.ts";

export type { Route };

export const hrefOf = {
  verify: "#/verify",
  lists: "#/lists",
  tasks: "#/tasks",
  task: (id: string) => `#/tasks/${id}`,
  credits: "#/credits",
  keys: "#/keys",
  webhooks: "#/webhooks",
  operator: "#/operator",
} as const;

export function navigate(href: string): void {
  if (window.location.hash !== href) window.location.hash = href;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(parseHash(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}
