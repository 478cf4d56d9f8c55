import { useState } from "preact/hooks";
import { openSession } from "../api.ts";
import { ErrorMessage } from "../components/feedback.tsx";
import { announce, useTitle } from "../hooks.ts";
import { startSession, type SignedOutReason } from "../session.ts";

export function SignIn({ reason }: { reason: SignedOutReason }) {
  useTitle("Sign in");
  const [key, setKey] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await openSession(key.trim());
      setKey("");
      startSession(session);
      announce("Signed in");
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="signin">
      <h1 tabIndex={-1}>Sign in</h1>
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
      <form onSubmit={(e) => void submit(e)} class="card stack">
        <div class="field">
          <label for="api-key">API key</label>
          <input
            id="api-key"
            name="api-key"
            type="password"
            autoComplete="off"
            spellcheck={false}
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
            aria-describedby="api-key-help"
          />
          <p id="api-key-help" class="help">
            A <code>custom</code> key (your first key is one). It is exchanged once for a session of about 15
            minutes and is not kept by the browser; when the session ends you are asked again.
          </p>
        </div>
        {error !== null && <ErrorMessage error={error} title="Could not sign in" />}
        <div>
          <button type="submit" disabled={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
        </div>
      </form>
      <p class="muted">
        No key yet? The operator creates one with <code>npx mailprobe users create --credits 100</code>.
      </p>
    </section>
  );
}
