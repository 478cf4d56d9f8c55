// The operator console: users with balances and usage, credit grants, and queue health, for
// whoever holds ADMIN_TOKEN. The token is kept in this tab's sessionStorage only (gone when the tab
// closes) and sent as a bearer token to /api/v1/operator; it is not the customers' session.
import { useState } from "preact/hooks";
import { MailprobeError } from "@mailprobe/client";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { SecretField } from "../components/secret-field.tsx";
import { PagedTable } from "../components/paged-table.tsx";
import { SubmitRow } from "../components/submit-row.tsx";
import { announce, useAction, useApi, useInterval, useTitle } from "../hooks.ts";
import { formatDateTime, formatNumber } from "../lib/format.ts";

const TOKEN_KEY = "mailprobe.operator-token";
const USERS_PAGE = 20;
const QUEUE_POLL_MS = 5000;

interface OperatorUser {
  user_id: string;
  email: string | null;
  balance: number;
  is_active: boolean;
  active_keys: number;
  last_used_at: string | null;
  usage: { days: number; verifications: number; credits_charged: number };
}

interface QueueHealth {
  at: string;
  jobs: {
    due: number;
    retry_backlog: number;
    next_retry_at: string | null;
    processing: number;
    expired_leases: number;
  };
  workers: Array<{ worker: string; jobs: number; lease_until: string; is_live: boolean }>;
  webhooks: {
    pending: number;
    retrying: number;
    next_attempt_at: string | null;
    delivering: number;
    failed_24h: number;
  };
  failing_deliveries: Array<{
    id: string;
    url: string;
    status: string;
    attempts: number;
    last_status_code: number | null;
    last_error: string | null;
    next_attempt_at: string | null;
  }>;
}

function storedToken(): string | null {
  try {
    return window.sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function storeToken(token: string | null): void {
  try {
    if (token === null) window.sessionStorage.removeItem(TOKEN_KEY);
    else window.sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage refused (private mode): the token then lives in memory for this page only.
  }
}

async function operatorCall<T>(
  token: string,
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const res = await fetch(`${window.location.origin}/api/v1/operator${path}`, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: init.signal,
  });
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) throw MailprobeError.fromResponse(res, body);
  return body as T;
}

const isUnauthorized = (e: unknown): boolean => e instanceof MailprobeError && e.status === 401;

export function OperatorPage() {
  useTitle("Operator");
  const [token, setToken] = useState<string | null>(storedToken);
  const [ended, setEnded] = useState(false);
  const signOut = (expired: boolean) => {
    storeToken(null);
    setToken(null);
    setEnded(expired);
    announce(expired ? "The admin token was refused: sign in again" : "Signed out of the operator console");
  };
  return (
    <section class="stack-lg">
      <h1 tabIndex={-1}>Operator console</h1>
      {token === null ? (
        <OperatorSignIn
          expired={ended}
          onSignedIn={(t) => {
            storeToken(t);
            setToken(t);
            announce("Signed in to the operator console");
          }}
        />
      ) : (
        <>
          <div class="button-row">
            <button type="button" class="secondary" onClick={() => signOut(false)}>
              Sign out of the console
            </button>
          </div>
          <QueueSection token={token} onUnauthorized={() => signOut(true)} />
          <UsersSection token={token} onUnauthorized={() => signOut(true)} />
        </>
      )}
    </section>
  );
}

function OperatorSignIn({ expired, onSignedIn }: { expired: boolean; onSignedIn: (token: string) => void }) {
  const [value, setValue] = useState("");
  const {
    busy,
    error,
    run: submit,
  } = useAction(async () => {
    const token = value.trim();
    await operatorCall(token, "/queue");
    setValue("");
    onSignedIn(token);
  });
  return (
    <>
      {expired && (
        <p class="notice" role="alert">
          The admin token was refused, sign in again.
        </p>
      )}
      <form onSubmit={(e) => void submit(e)} class="card stack">
        <SecretField
          id="admin-token"
          label="Admin token"
          value={value}
          onInput={setValue}
          help={
            <>
              The server's <code>ADMIN_TOKEN</code>. It stays in this tab only and is forgotten when the tab
              closes. Without <code>ADMIN_TOKEN</code> set on the server the console is off.
            </>
          }
        />
        <SubmitRow
          busy={busy}
          error={error}
          errorTitle="Could not sign in to the console"
          label="Sign in to the console"
          busyLabel="Signing in…"
        />
      </form>
    </>
  );
}

function QueueSection({ token, onUnauthorized }: { token: string; onUnauthorized: () => void }) {
  const queue = useApi(
    async (signal) => {
      try {
        return await operatorCall<QueueHealth>(token, "/queue", { signal });
      } catch (e) {
        if (isUnauthorized(e)) onUnauthorized();
        throw e;
      }
    },
    [token],
  );
  useInterval(queue.reload, QUEUE_POLL_MS, true);
  const q = queue.data;
  return (
    <section class="card" aria-labelledby="queue-title">
      <h2 id="queue-title">Queue health</h2>
      {queue.error !== undefined && queue.error !== null && (
        <ErrorMessage error={queue.error} title="Could not load the queue" onRetry={queue.reload} />
      )}
      {queue.loading && !q && <Loading label="Loading the queue…" />}
      {q && (
        <>
          <dl class="counts">
            <div>
              <dt>Addresses waiting for a worker</dt>
              <dd>{formatNumber(q.jobs.due)}</dd>
            </div>
            <div>
              <dt>Being verified</dt>
              <dd>{formatNumber(q.jobs.processing)}</dd>
            </div>
            <div>
              <dt>Retry backlog</dt>
              <dd>
                {formatNumber(q.jobs.retry_backlog)}
                {q.jobs.next_retry_at && (
                  <span class="muted small"> next {formatDateTime(q.jobs.next_retry_at)}</span>
                )}
              </dd>
            </div>
            <div>
              <dt>Expired leases</dt>
              <dd>{formatNumber(q.jobs.expired_leases)}</dd>
            </div>
            <div>
              <dt>Webhooks retrying</dt>
              <dd>
                {formatNumber(q.webhooks.retrying)}
                {q.webhooks.next_attempt_at && (
                  <span class="muted small"> next {formatDateTime(q.webhooks.next_attempt_at)}</span>
                )}
              </dd>
            </div>
            <div>
              <dt>Webhooks given up (24 h)</dt>
              <dd>{formatNumber(q.webhooks.failed_24h)}</dd>
            </div>
          </dl>
          <h3>Worker heartbeats</h3>
          {q.workers.length === 0 ? (
            <p class="muted">No worker holds jobs right now.</p>
          ) : (
            <table class="cards">
              <caption class="visually-hidden">Workers holding jobs and their lease</caption>
              <thead>
                <tr>
                  <th scope="col">Worker</th>
                  <th scope="col" class="num">
                    Jobs
                  </th>
                  <th scope="col">Lease until</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {q.workers.map((w) => (
                  <tr key={w.worker}>
                    <th scope="row">
                      <code>{w.worker}</code>
                    </th>
                    <td data-label="Jobs" class="num">
                      {formatNumber(w.jobs)}
                    </td>
                    <td data-label="Lease until">{formatDateTime(w.lease_until)}</td>
                    <td data-label="State">{w.is_live ? "Live" : "Lease expired"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>Failing webhook deliveries</h3>
          {q.failing_deliveries.length === 0 ? (
            <p class="muted">No delivery is failing.</p>
          ) : (
            <table class="cards">
              <caption class="visually-hidden">Webhook deliveries that failed their last attempt</caption>
              <thead>
                <tr>
                  <th scope="col">Receiver</th>
                  <th scope="col">State</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Next attempt</th>
                </tr>
              </thead>
              <tbody>
                {q.failing_deliveries.map((d) => (
                  <tr key={d.id}>
                    <th scope="row">{d.url}</th>
                    <td data-label="State">{d.status === "failed" ? "Given up" : "Retrying"}</td>
                    <td data-label="Attempts" class="num">
                      {formatNumber(d.attempts)}
                    </td>
                    <td data-label="Last answer">
                      {d.last_status_code !== null
                        ? `HTTP ${String(d.last_status_code)}`
                        : (d.last_error ?? "-")}
                    </td>
                    <td data-label="Next attempt">
                      {d.next_attempt_at ? formatDateTime(d.next_attempt_at) : "-"}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}

function UsersSection({ token, onUnauthorized }: { token: string; onUnauthorized: () => void }) {
  const [search, setSearch] = useState("");
  const [applied, setApplied] = useState("");
  const [offset, setOffset] = useState(0);
  const [granting, setGranting] = useState<OperatorUser | null>(null);
  // What the last grant did, on screen until the next one starts (and read out by announce).
  const [granted, setGranted] = useState<string | null>(null);
  const users = useApi(
    async (signal) => {
      const query = new URLSearchParams({ limit: String(USERS_PAGE), offset: String(offset) });
      if (applied) query.set("email", applied);
      try {
        return await operatorCall<{ users: OperatorUser[]; total: number }>(
          token,
          `/users?${query.toString()}`,
          {
            signal,
          },
        );
      } catch (e) {
        if (isUnauthorized(e)) onUnauthorized();
        throw e;
      }
    },
    [token, applied, offset],
  );

  return (
    <section class="card" aria-labelledby="users-title">
      <h2 id="users-title">Users</h2>
      <form
        class="filters"
        aria-label="Find users"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setApplied(search.trim());
        }}
      >
        <div class="field grow">
          <label for="user-search">Email contains</label>
          <input
            id="user-search"
            type="search"
            value={search}
            onInput={(e) => setSearch(e.currentTarget.value)}
            spellcheck={false}
          />
        </div>
        <div>
          <button type="submit" class="secondary">
            Find
          </button>
        </div>
      </form>
      {users.error !== undefined && users.error !== null && (
        <ErrorMessage error={users.error} title="Could not load users" onRetry={users.reload} />
      )}
      {users.loading && !users.data && <Loading label="Loading users…" />}
      {users.data && (
        <PagedTable
          instead={users.data.users.length === 0 ? <Empty title="No user matches." /> : undefined}
          caption={
            <>
              Users, newest first, with balance and usage over the last {users.data.users[0]?.usage.days} days
            </>
          }
          head={
            <>
              <th scope="col">User</th>
              <th scope="col" class="num">
                Balance
              </th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Active keys
              </th>
              <th scope="col" class="num">
                Verified (30 d)
              </th>
              <th scope="col" class="num">
                Charged (30 d)
              </th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </>
          }
          page={{
            offset,
            limit: USERS_PAGE,
            total: users.data.total,
            label: "Users pages",
            onChange: setOffset,
          }}
        >
          {users.data.users.map((u) => (
            <tr key={u.user_id}>
              <th scope="row">
                {u.email ?? <span class="muted">(no email)</span>}
                <br />
                <code class="small">{u.user_id}</code>
              </th>
              <td data-label="Balance" class="num">
                {formatNumber(u.balance)}
              </td>
              <td data-label="State">{u.is_active ? "Active" : "Deactivated"}</td>
              <td data-label="Active keys" class="num">
                {formatNumber(u.active_keys)}
              </td>
              <td data-label="Verified (30 d)" class="num">
                {formatNumber(u.usage.verifications)}
              </td>
              <td data-label="Charged (30 d)" class="num">
                {formatNumber(u.usage.credits_charged)}
              </td>
              <td data-label="" class="actions">
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Grant credits to ${u.email ?? u.user_id}`}
                  onClick={() => {
                    setGranted(null);
                    setGranting(u);
                  }}
                >
                  Grant credits
                </button>
              </td>
            </tr>
          ))}
        </PagedTable>
      )}
      {granting && (
        <GrantForm
          key={granting.user_id}
          token={token}
          user={granting}
          onDone={(message) => {
            setGranting(null);
            setGranted(message);
            if (message) announce(message);
            users.reload();
          }}
        />
      )}
      {granted !== null && (
        <p class="notice success" role="status">
          {granted}.
        </p>
      )}
    </section>
  );
}

function GrantForm({
  token,
  user,
  onDone,
}: {
  token: string;
  user: OperatorUser;
  onDone: (message: string | null) => void;
}) {
  const [amount, setAmount] = useState("");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const who = user.email ?? user.user_id;
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const t = await operatorCall<{ balance_after: number }>(token, `/users/${user.user_id}/grants`, {
        method: "POST",
        body: { amount: Number(amount), reason: reason.trim() },
      });
      onDone(`Granted ${amount} credits to ${who}: balance ${formatNumber(t.balance_after)}`);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <form class="stack" aria-labelledby="grant-title" onSubmit={(e) => void submit(e)}>
      <h3 id="grant-title">Grant credits to {who}</h3>
      <div class="inline-form">
        <div class="field">
          <label for="grant-amount">Credits</label>
          <input
            id="grant-amount"
            type="number"
            inputMode="numeric"
            min={1}
            step={1}
            required
            value={amount}
            onInput={(e) => setAmount(e.currentTarget.value)}
          />
        </div>
        <div class="field grow">
          <label for="grant-reason">Reason</label>
          <input
            id="grant-reason"
            type="text"
            required
            maxLength={500}
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
            aria-describedby="grant-reason-help"
          />
        </div>
      </div>
      <p id="grant-reason-help" class="help">
        Recorded on the user's ledger with the grant (shown to them as its reason).
      </p>
      {error !== null && <ErrorMessage error={error} title="Could not grant the credits" />}
      <div class="button-row">
        <button type="submit" disabled={busy}>
          {busy ? "Granting…" : "Grant"}
        </button>
        <button type="button" class="secondary" onClick={() => onDone(null)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
