// The shell: sign-in gate, header with navigation and sign-out, the live region, and the page
// for the current hash route. Focus moves to the page heading on navigation.
import { useEffect, useRef, useState } from "preact/hooks";
import { hrefOf, useRoute, type Route } from "./router.ts";
import { setAnnouncer } from "./hooks.ts";
import { signOut, useSession } from "./session.ts";
import { SignIn } from "./pages/sign-in.tsx";
import { VerifyPage } from "./pages/verify.tsx";
import { ListsPage } from "./pages/lists.tsx";
import { TasksPage } from "./pages/tasks.tsx";
import { TaskPage } from "./pages/task/index.tsx";
import { CreditsPage } from "./pages/credits.tsx";
import { KeysPage } from "./pages/keys.tsx";
import { WebhooksPage } from "./pages/webhooks.tsx";
import { OperatorPage } from "./pages/operator.tsx";

const NAV: Array<{ href: string; label: string; pages: Route["page"][] }> = [
  { href: hrefOf.verify, label: "Verify", pages: ["verify"] },
  { href: hrefOf.lists, label: "Lists", pages: ["lists"] },
  { href: hrefOf.tasks, label: "Tasks", pages: ["tasks", "task"] },
  { href: hrefOf.credits, label: "Credits", pages: ["credits"] },
  { href: hrefOf.keys, label: "API keys", pages: ["keys"] },
  { href: hrefOf.webhooks, label: "Webhooks", pages: ["webhooks"] },
  { href: hrefOf.operator, label: "Operator", pages: ["operator"] },
];

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "verify":
      return <VerifyPage />;
    case "lists":
      return <ListsPage />;
    case "tasks":
      return <TasksPage />;
    case "task":
      return <TaskPage id={route.id} />;
    case "credits":
      return <CreditsPage />;
    case "keys":
      return <KeysPage />;
    case "webhooks":
      return <WebhooksPage />;
    case "operator":
      return <OperatorPage />;
    case "not-found":
      return (
        <section>
          <h1 tabIndex={-1}>Page not found</h1>
          <p>
            There is no page at <code>{route.path}</code>. Go to <a href={hrefOf.verify}>Verify</a> or{" "}
            <a href={hrefOf.tasks}>Tasks</a>.
          </p>
        </section>
      );
  }
}

function LiveRegion() {
  const [message, setMessage] = useState("");
  useEffect(() => {
    setAnnouncer((m) => {
      // Cleared first so that the same message twice is read twice.
      setMessage("");
      window.setTimeout(() => setMessage(m), 50);
    });
    return () => setAnnouncer(null);
  }, []);
  return (
    <div class="visually-hidden" role="status" aria-live="polite" aria-atomic="true">
      {message}
    </div>
  );
}

export function App() {
  const { session, reason } = useSession();
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const routeKey = route.page === "task" ? `task:${route.id}` : route.page;
  const firstRender = useRef(true);

  useEffect(() => {
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    // After a navigation, focus the new page's heading so keyboard and screen-reader users
    // start there (and hear its name).
    main.current?.querySelector<HTMLElement>("h1")?.focus();
  }, [routeKey, session !== null]);

  return (
    <>
      <a
        class="skip-link"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href={hrefOf.verify}>
          <span class="brand-mark" aria-hidden="true" />
          mailprobe
        </a>
        {session && (
          <>
            <nav aria-label="Main" class="mainnav">
              <ul>
                {NAV.map((item) => (
                  <li key={item.href}>
                    <a href={item.href} aria-current={item.pages.includes(route.page) ? "page" : undefined}>
                      {item.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
            <button type="button" class="secondary signout" onClick={signOut}>
              Sign out
            </button>
          </>
        )}
        {!session && (
          <nav aria-label="Operator" class="mainnav">
            <ul>
              <li>
                <a href={hrefOf.operator} aria-current={route.page === "operator" ? "page" : undefined}>
                  Operator console
                </a>
              </li>
            </ul>
          </nav>
        )}
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {/* The operator console signs in with ADMIN_TOKEN, not a user's session. */}
        {session || route.page === "operator" ? (
          <Page key={routeKey} route={route} />
        ) : (
          <SignIn reason={reason} />
        )}
      </main>
      <LiveRegion />
    </>
  );
}
