import { useRef, useState } from "preact/hooks";
import { isMailprobeError, type VerificationResult } from "@mailprobe/client";
import { notAnAddressReason } from "../../../src/lib/address-shape.ts";
import { client, request } from "../api.ts";
import { ErrorMessage } from "../components/feedback.tsx";
import { ResultCard } from "../components/result-card.tsx";
import { announce, useTitle } from "../hooks.ts";
import { plural } from "../lib/format.ts";
import { statusLabel } from "../lib/explain.ts";

interface Outcome {
  result: VerificationResult;
  /** Credits the call took (balance before − after); null when a balance read failed. */
  cost: number | null;
  balance: number | null;
  /** Set for a 408: the partial result of a verification that ran out of time. */
  timedOut: string | null;
}

async function balanceNow(): Promise<number | null> {
  try {
    return (await request(client.GET("/api/v1/credits/balance"))).balance;
  } catch {
    return null;
  }
}

export function VerifyPage() {
  useTitle("Verify");
  const [email, setEmail] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const input = useRef<HTMLInputElement>(null);

  async function submit(e: Event) {
    e.preventDefault();
    // The API's own rule (DESIGN §5): only input that is not address-shaped is refused; anything
    // else, `"john doe"@example.com` included, goes to the API, whose verdict may be invalid_syntax.
    const reason = notAnAddressReason(email.trim());
    setProblem(reason === null ? null : `The email address ${reason}.`);
    setError(null);
    setOutcome(null);
    if (reason !== null) {
      input.current?.focus();
      return;
    }
    setBusy(true);
    announce("Verifying…");
    const before = await balanceNow();
    let result: VerificationResult;
    let timedOut: string | null = null;
    try {
      result = await request(client.POST("/api/v1/verify", { body: { email: email.trim() } }));
    } catch (err) {
      const partial = isMailprobeError(err, "VERIFICATION_TIMEOUT")
        ? (err.body as { result?: VerificationResult } | undefined)?.result
        : undefined;
      if (!partial || !isMailprobeError(err)) {
        setError(err);
        setBusy(false);
        announce("Verification failed");
        return;
      }
      result = partial;
      timedOut = err.message;
    }
    const after = await balanceNow();
    setOutcome({
      result,
      cost: before !== null && after !== null ? before - after : null,
      balance: after,
      timedOut,
    });
    setBusy(false);
    announce(`${result.email}: ${statusLabel(result.status)}`);
  }

  return (
    <section>
      <h1 tabIndex={-1}>Verify an address</h1>
      <p class="lead">
        One address, checked now: syntax, domain, mail servers and the mailbox itself. It costs 1 credit,
        except when the answer is <em>unknown</em> or you already paid for the same address in the last 24
        hours.
      </p>
      <form class="card inline-form" onSubmit={(e) => void submit(e)}>
        <div class="field grow">
          <label for="verify-email">Email address</label>
          {/* type="text", not "email": the browser's check refuses quoted local parts and other
              addresses the API takes, and maxLength would cut a pasted address silently. */}
          <input
            ref={input}
            id="verify-email"
            type="text"
            inputMode="email"
            autoComplete="email"
            autoCapitalize="off"
            spellcheck={false}
            aria-required="true"
            aria-invalid={problem !== null}
            aria-describedby={problem !== null ? "verify-email-problem" : undefined}
            placeholder="someone@example.com"
            value={email}
            onInput={(e) => {
              setEmail(e.currentTarget.value);
              setProblem(null);
            }}
          />
        </div>
        <button type="submit" disabled={busy}>
          Verify
        </button>
      </form>
      {problem !== null && (
        <p id="verify-email-problem" class="error" role="alert">
          {problem}
        </p>
      )}
      {busy && (
        <p class="loading" role="status">
          <span class="spinner" aria-hidden="true" />
          Checking… a mail server can take up to half a minute to answer.
        </p>
      )}
      {error !== null && <ErrorMessage error={error} title="The address could not be verified" />}
      {outcome && (
        <>
          {outcome.timedOut && (
            <p class="notice" role="alert">
              {outcome.timedOut}. This is the partial result; it was not charged.
            </p>
          )}
          <ResultCard result={outcome.result} cost={costText(outcome)} />
        </>
      )}
    </section>
  );
}

function costText(o: Outcome): string {
  const balance = o.balance === null ? "" : ` Balance: ${plural(o.balance, "credit", "credits")}.`;
  if (o.cost === null) return `1 credit unless the result is unknown or a repeat within 24 hours.${balance}`;
  if (o.cost <= 0) {
    const why =
      o.result.status === "unknown"
        ? "unknown results are free"
        : "you verified this address in the last 24 hours, so this repeat is free";
    return `Free: ${why}.${balance}`;
  }
  return `${plural(o.cost, "credit", "credits")}.${balance}`;
}
