// Hash routing (`#/tasks/…`): the server serves one index.html at `/` and needs no fallback.
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "verify" }
  | { page: "lists" }
  | { page: "tasks" }
  | { page: "task"; id: string }
  | { page: "credits" }
  | { page: "keys" }
  | { page: "webhooks" }
  | { page: "not-found"; path: string };

export function parseHash(hash: string): Route {
  const path = decodeURIComponent(hash.replace(/^#/, "").split("?")[0] ?? "").replace(/\/+$/, "") || "/";
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
    default:
      return { page: "not-found", path };
  }
}

export const hrefOf = {
  verify: "#/verify",
  lists: "#/lists",
  tasks: "#/tasks",
  task: (id: string) => `#/tasks/${id}`,
  credits: "#/credits",
  keys: "#/keys",
  webhooks: "#/webhooks",
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
