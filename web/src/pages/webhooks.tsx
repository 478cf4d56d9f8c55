import { useState } from "preact/hooks";
import type { WebhookDelivery } from "@mailprobe/client";
import { client, errorMessage, request } from "../api.ts";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { PagedTable } from "../components/paged-table.tsx";
import { announce, useApi, useInterval, useTitle } from "../hooks.ts";
import { formatDateTime } from "../lib/format.ts";
import { hrefOf } from "../router.ts";

const DELIVERIES_PAGE = 20;
const POLL_MS = 3000;

const DELIVERY_LABEL: Record<WebhookDelivery["status"], string> = {
  pending: "Waiting",
  delivering: "Sending",
  delivered: "Delivered",
  failed: "Failed",
};

/** Badge colours shared with result statuses (their contrast is checked by the browser suite). */
const DELIVERY_BADGE: Record<WebhookDelivery["status"], string> = {
  pending: "badge",
  delivering: "badge",
  delivered: "badge badge-valid",
  failed: "badge badge-invalid",
};

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
      <DeliveriesSection />
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

/** What the receiver answered last, in words. */
function lastAnswer(d: WebhookDelivery): string {
  if (d.last_status_code !== null) return `HTTP ${String(d.last_status_code)}`;
  if (d.last_error) return d.last_error;
  return d.attempts === 0 ? "Not sent yet" : "No answer";
}

/**
 * The webhook log: every delivery (task.completed events and test pings), what the receiver
 * answered, the next attempt; a test event to any URL; redelivery of one delivery.
 */
function DeliveriesSection() {
  const [offset, setOffset] = useState(0);
  const log = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/webhooks/deliveries", {
          params: { query: { limit: DELIVERIES_PAGE, offset } },
          signal,
        }),
      ),
    [offset],
  );
  const list = log.data?.deliveries ?? [];
  const inFlight = list.some((d) => d.status === "pending" || d.status === "delivering");
  useInterval(log.reload, POLL_MS, inFlight);

  const [url, setUrl] = useState("");
  const [sending, setSending] = useState(false);
  const [sendError, setSendError] = useState<unknown>(null);
  const [redelivering, setRedelivering] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ id: string; error: unknown } | null>(null);

  async function sendTest(e: Event) {
    e.preventDefault();
    setSending(true);
    setSendError(null);
    try {
      await request(client.POST("/api/v1/webhooks/test", { body: { url: url.trim() } }));
      announce("Test event queued");
      setOffset(0);
      log.reload();
    } catch (err) {
      setSendError(err);
    } finally {
      setSending(false);
    }
  }

  async function redeliver(d: WebhookDelivery) {
    setRedelivering(d.id);
    setRowError(null);
    try {
      await request(
        client.POST("/api/v1/webhooks/deliveries/{id}/redeliver", { params: { path: { id: d.id } } }),
      );
      announce("Delivery queued again");
      log.reload();
    } catch (err) {
      setRowError({ id: d.id, error: err });
    } finally {
      setRedelivering(null);
    }
  }

  return (
    <section class="card" aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      <form class="stack" onSubmit={(e) => void sendTest(e)} aria-label="Send a test event">
        <div class="field">
          <label for="ping-url">Send a test event to</label>
          <input
            id="ping-url"
            type="url"
            inputMode="url"
            required
            placeholder="https://hooks.example.com/mailprobe"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
            aria-describedby="ping-url-help"
          />
          <p id="ping-url-help" class="help">
            We POST a signed <code>ping</code> event there once (no retries), so you can check your receiver
            before a list finishes. It appears in the log below.
          </p>
        </div>
        <div class="button-row">
          <button type="submit" class="secondary" disabled={sending || url.trim() === ""}>
            Send test event
          </button>
        </div>
        {sendError !== null && <ErrorMessage error={sendError} title="The test event was not sent" />}
      </form>
      {log.error !== undefined && log.error !== null && (
        <ErrorMessage error={log.error} title="Could not load the deliveries" onRetry={log.reload} />
      )}
      {log.loading && !log.data && <Loading label="Loading the deliveries…" />}
      {log.data && log.data.count === 0 && (
        <Empty title="No deliveries yet: they appear here when a list with a webhook URL finishes." />
      )}
      {log.data && log.data.count > 0 && (
        <>
          <PagedTable
            region="Deliveries table"
            caption="Webhook deliveries, newest first"
            head={
              <>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">
                  Attempts
                </th>
                <th scope="col">Last answer</th>
                <th scope="col">When</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </>
            }
            page={{
              offset: offset,
              limit: DELIVERIES_PAGE,
              total: log.data.count,
              label: "Deliveries pages",
              onChange: setOffset,
            }}
          >
            {list.map((d) => {
              const nameId = `delivery-${d.id}`;
              return (
                <tr key={d.id}>
                  <th scope="row" id={nameId}>
                    <code>{d.event_type}</code>
                    {d.task_id && (
                      <>
                        {" "}
                        <a href={hrefOf.task(d.task_id)}>task</a>
                      </>
                    )}
                    <div class="muted small addr">{d.url}</div>
                  </th>
                  <td data-label="Status">
                    <span class={DELIVERY_BADGE[d.status]}>{DELIVERY_LABEL[d.status]}</span>
                  </td>
                  <td data-label="Attempts" class="num">
                    {d.attempts}
                  </td>
                  <td data-label="Last answer" class="small">
                    {lastAnswer(d)}
                  </td>
                  <td data-label="When" class="small">
                    {d.delivered_at
                      ? `Delivered ${formatDateTime(d.delivered_at)}`
                      : d.next_attempt_at
                        ? `Next attempt ${formatDateTime(d.next_attempt_at)}`
                        : `Created ${formatDateTime(d.created_at)}`}
                  </td>
                  <td class="actions">
                    {d.status !== "delivering" && (
                      <button
                        type="button"
                        class="secondary"
                        aria-describedby={nameId}
                        disabled={redelivering === d.id}
                        onClick={() => void redeliver(d)}
                      >
                        Redeliver
                      </button>
                    )}
                    {rowError?.id === d.id && (
                      <p class="error small" role="alert">
                        {errorMessage(rowError.error)}
                      </p>
                    )}
                  </td>
                </tr>
              );
            })}
          </PagedTable>
        </>
      )}
    </section>
  );
}
