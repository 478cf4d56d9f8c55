import { useEffect, useState } from "preact/hooks";
import { fetchSessionPolicy, openSession, type SessionPolicy } from "../api.ts";
import { ErrorMessage, Loading } from "../components/feedback.tsx";
import { SecretField } from "../components/secret-field.tsx";
import { SubmitRow } from "../components/submit-row.tsx";
import { announce, useAction, useApi, useTitle } from "../hooks.ts";
import { formatDuration, plural } from "../lib/format.ts";
import { startSession, useSession, type SignedOutReason } from "../session.ts";
import { linkSignIn, onLinkSignIn, type LinkSignIn } from "../sign-in-link.ts";

/** The state of a sign-in link being redeemed (sign-in-link.ts), re-rendering as it changes. */
function useLinkSignIn(): LinkSignIn {
  const [state, setState] = useState(linkSignIn);
  useEffect(() => {
    setState(linkSignIn());
    return onLinkSignIn(() => setState(linkSignIn()));
  }, []);
  return state;
}

/**
 * "a session of 15 minutes, renewed while you use the dashboard or watch a task on screen, for
 * up to 12 hours after you sign in".
 */
function lifetimeText(policy: SessionPolicy | undefined): string {
  if (!policy) return "a short session, renewed while you use the dashboard or watch a task on screen";
  return `a session of ${formatDuration(policy.lifetime_seconds * 1000)}, renewed while you use the dashboard or watch a task on screen, for up to ${plural(policy.max_hours, "hour", "hours")} after you sign in`;
}

export function SignIn({ reason }: { reason: SignedOutReason }) {
  useTitle("Sign in");
  const { joining } = useSession();
  const link = useLinkSignIn();
  // The text still reads well without it (an old server, a network hiccup): no error shown.
  const policy = useApi((signal) => fetchSessionPolicy(signal), []).data;
  const [key, setKey] = useState("");
  const [remember, setRemember] = useState(false);
  const {
    busy,
    error,
    run: submit,
  } = useAction(async () => {
    const session = await openSession(key.trim(), remember);
    setKey("");
    startSession(session);
    announce("Signed in");
  });
  const days = policy?.device_remember_days;

  if (link.busy)
    return (
      <section class="signin">
        <h1 tabIndex={-1}>Sign in</h1>
        <Loading label="Signing in with your link…" />
      </section>
    );

  if (joining)
    return (
      <section class="signin">
        <h1 tabIndex={-1}>Sign in</h1>
        <Loading label="Looking for a session open in another tab or a remembered one…" />
      </section>
    );

  return (
    <section class="signin">
      <h1 tabIndex={-1}>Sign in</h1>
      {reason === "limit" && (
        <p class="notice" role="alert">
          Your session reached its {policy ? `${String(policy.max_hours)}-hour` : "time"} limit, sign in
          again.
        </p>
      )}
      {reason === "expired" && (
        <p class="notice" role="alert">
          Your session expired, sign in again.
        </p>
      )}
      {reason === "signed_out" && (
        <p class="notice" role="status">
          You are signed out.
        </p>
      )}
      {link.error !== null && <ErrorMessage error={link.error} title="This sign-in link did not work" />}
      <form onSubmit={(e) => void submit(e)} class="card stack">
        <SecretField
          id="api-key"
          label="API key"
          value={key}
          onInput={setKey}
          help={
            <>
              A <code>custom</code> key (your first key is one). It is exchanged once for{" "}
              {lifetimeText(policy)}, shared by the tabs of this browser. The key is not kept by the browser;
              when the session ends you are asked again.
            </>
          }
        />
        <div class="check-block">
          <label class="check">
            <input
              type="checkbox"
              checked={remember}
              onChange={(e) => setRemember(e.currentTarget.checked)}
              aria-describedby="remember-help"
            />
            Remember this device{days ? ` for ${plural(days, "day", "days")}` : ""}
          </label>
          <p id="remember-help" class="help">
            Only on a computer no one else uses: this browser then signs in without the key, until you sign
            out here, revoke it on the API keys page, or revoke the key. Showing or creating keys still asks
            for the key.
          </p>
        </div>
        <SubmitRow
          busy={busy}
          error={error}
          errorTitle="Could not sign in"
          label="Sign in"
          busyLabel="Signing in…"
        />
      </form>
      <p class="muted">
        No key yet? The operator creates one with <code>npx mailprobe users create --credits 100</code>.
      </p>
      <p class="muted">
        Key not at hand? A sign-in link works once, within 15 minutes:{" "}
        <code>mailprobe client sign-in-link</code> where your key is set, or ask the operator for{" "}
        <code>mailprobe users sign-in-link</code>.
      </p>
    </section>
  );
}
