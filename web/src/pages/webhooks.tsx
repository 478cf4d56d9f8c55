import { useState } from "preact/hooks";
import { client, request } from "../api.ts";
import { ErrorMessage, Loading } from "../components/feedback.tsx";
import { announce, useApi, useTitle } from "../hooks.ts";
import { hrefOf } from "../router.ts";

const SDK_SAMPLE = `// Node 22 (or any runtime with WebCrypto), with @mailprobe/client (sdk/ in the mailprobe repository)
import { createServer } from "node:http";
import { verifyWebhookSignature } from "@mailprobe/client/webhooks";

const secret = process.env.MAILPROBE_WEBHOOK_SECRET; // whsec_…

createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const payload = Buffer.concat(chunks); // the raw body: re-serialised JSON would not verify

  const check = await verifyWebhookSignature({ payload, headers: req.headers, secret });
  if (!check.ok) {
    res.writeHead(400).end(check.reason); // e.g. signature_mismatch, timestamp_too_old
    return;
  }
  // check.id is stable across retries: use it to ignore duplicates.
  const { task_id, metrics } = check.event.data;
  console.log("task", task_id, "finished:", metrics.verification_status);
  res.writeHead(204).end();
}).listen(3000);`;

const STANDARD_SAMPLE = `// Any Standard Webhooks library works, e.g. npm install standardwebhooks
import { Webhook } from "standardwebhooks";

const wh = new Webhook(process.env.MAILPROBE_WEBHOOK_SECRET);
// Throws when the signature or timestamp is wrong; returns the parsed event.
const event = wh.verify(rawBody, {
  "webhook-id": headers["webhook-id"],
  "webhook-timestamp": headers["webhook-timestamp"],
  "webhook-signature": headers["webhook-signature"],
});`;

const PAYLOAD_SAMPLE = `POST /your/endpoint
webhook-id: 7f3c2a90-…
webhook-timestamp: 1767225600
webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
content-type: application/json

{"type":"task.completed","timestamp":"2026-01-01T00:00:00.000Z",
 "data":{"task_id":"…","upload_id":"…","metrics":{"total_email_addresses":120,…}}}`;

export function WebhooksPage() {
  useTitle("Webhooks");
  const secret = useApi((signal) => request(client.GET("/api/v1/webhooks/secret", { signal })), []);
  const [shown, setShown] = useState(false);

  async function copySecret(value: string) {
    try {
      await navigator.clipboard.writeText(value);
      announce("Secret copied to the clipboard");
    } catch {
      announce("Copying is not allowed here: show the secret and copy it by hand");
    }
  }

  return (
    <section class="stack-lg">
      <h1 tabIndex={-1}>Webhooks</h1>
      <p class="lead">
        Give a list a <strong>Webhook URL</strong> (on the <a href={hrefOf.lists}>Lists</a> page or as{" "}
        <code>webhook_url</code> in the API) and when it finishes we send it a <code>task.completed</code>{" "}
        event, signed with your secret per <em>Standard Webhooks</em>. Check the signature before trusting the
        request: anyone can POST to your URL.
      </p>
      <section class="card" aria-labelledby="secret-title">
        <h2 id="secret-title">Signing secret</h2>
        {secret.error !== undefined && secret.error !== null && (
          <ErrorMessage error={secret.error} title="Could not load the secret" onRetry={secret.reload} />
        )}
        {secret.loading && !secret.data && <Loading label="Loading the secret…" />}
        {secret.data && (
          <>
            <p class="secret">
              <code aria-label={shown ? "Signing secret" : "Signing secret (hidden)"}>
                {shown ? secret.data.secret : "whsec_" + "•".repeat(24)}
              </code>
            </p>
            <div class="button-row">
              <button type="button" class="secondary" aria-pressed={shown} onClick={() => setShown(!shown)}>
                {shown ? "Hide secret" : "Show secret"}
              </button>
              <button type="button" class="secondary" onClick={() => void copySecret(secret.data!.secret)}>
                Copy secret
              </button>
            </div>
            <p class="muted small">
              Keep it on your server only (an environment variable). It is the same for all your lists.
            </p>
          </>
        )}
      </section>
      <section class="card" aria-labelledby="verify-title">
        <h2 id="verify-title">Verifying a delivery</h2>
        <ol class="steps">
          <li>
            Read the raw request body and the <code>webhook-id</code>, <code>webhook-timestamp</code> and{" "}
            <code>webhook-signature</code> headers.
          </li>
          <li>
            Compute HMAC-SHA256 of <code>{"${webhook-id}.${webhook-timestamp}.${body}"}</code> with the
            base64-decoded part of your secret after <code>whsec_</code>; compare it (in constant time) with
            each <code>v1,…</code> signature of the header.
          </li>
          <li>Refuse timestamps more than 5 minutes away from your clock (replays).</li>
          <li>
            Answer 2xx quickly. Anything else, or no answer within 10 s, is retried with growing delays (30 s,
            2 min, 10 min, 30 min, then hourly) for 24 hours; the <code>webhook-id</code> stays the same, so
            ignore duplicates.
          </li>
        </ol>
        <h3>With the mailprobe SDK</h3>
        <pre class="code" tabIndex={0} aria-label="Code sample with the mailprobe SDK">
          <code>{SDK_SAMPLE}</code>
        </pre>
        <h3>With a Standard Webhooks library</h3>
        <pre class="code" tabIndex={0} aria-label="Code sample with the standardwebhooks package">
          <code>{STANDARD_SAMPLE}</code>
        </pre>
        <h3>What a delivery looks like</h3>
        <pre class="code" tabIndex={0} aria-label="A sample delivery">
          <code>{PAYLOAD_SAMPLE}</code>
        </pre>
        <p class="muted small">
          Receivers must be public: URLs on private or loopback networks are refused unless the operator
          allows them.
        </p>
      </section>
    </section>
  );
}
