import { useState } from "preact/hooks";
import type { CreditTransaction } from "@mailprobe/client";
import { client, request } from "../api.ts";
import { BarChart } from "../components/bar-chart.tsx";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { PagedTable } from "../components/paged-table.tsx";
import { useApi, useTitle } from "../hooks.ts";
import {
  daysAgo,
  endOfDay,
  formatDateTime,
  formatDay,
  formatNumber,
  formatShortDay,
  isoDay,
  plural,
  pointsThrough,
  startOfDay,
} from "../lib/format.ts";
import { hrefOf } from "../router.ts";

const LEDGER_PAGE = 25;
const MAX_RANGE_DAYS = 90;

interface Range {
  from: string;
  to: string;
}

const lastDays = (n: number): Range => ({ from: daysAgo(n - 1), to: isoDay(new Date()) });

const metaString = (t: CreditTransaction, key: string): string | null => {
  const v = t.metadata?.[key];
  return typeof v === "string" ? v : null;
};

const REASON_TEXT: Record<string, string> = {
  verification: "Realtime verification",
  task_reservation: "Reserved for a list",
  task_unknown_refund: "Refund of unknown results",
  task_cancelled_refund: "Refund of a cancelled list",
  task_cancelled_late_result: "Results that arrived after a cancel",
};

/**
 * An operator's grant (`mailprobe credits grant`, the admin API, the account's opening credits):
 * the only grants not tied to a task, since every refund carries the task's id.
 */
const isOperatorGrant = (t: CreditTransaction): boolean =>
  t.type === "grant" && metaString(t, "task_id") === null;

/** Known reasons in words; an operator's own reason ("initial_grant", "promo") made readable. */
function reasonText(t: CreditTransaction): string {
  if (isOperatorGrant(t)) {
    if (!t.reason || t.reason === "initial_grant") return "Granted by the operator: opening credits";
    return `Granted by the operator: ${t.reason.replace(/_/g, " ").trim()}`;
  }
  if (!t.reason) return t.type === "grant" ? "Grant" : "Deduction";
  const known = REASON_TEXT[t.reason];
  if (known) return known;
  const words = t.reason.replace(/_/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The period's net in words: whether the balance went up or down, and by how much. */
function netText(net: number): string {
  if (net === 0) return "Unchanged: as many credits used as granted";
  const n = plural(Math.abs(net), "credit", "credits");
  return net > 0 ? `Down ${n}: more used than granted` : `Up ${n}: more granted than used`;
}

const SOURCE_TEXT: Record<string, string> = {
  frontend: "Dashboard",
  api_key: "API key",
  operator: "Operator",
};

const rangeDays = (r: Range): number => (Date.parse(r.to) - Date.parse(r.from)) / 86_400_000 + 1;

export function CreditsPage() {
  useTitle("Credits");
  const balance = useApi((signal) => request(client.GET("/api/v1/credits/balance", { signal })), []);
  return (
    <section class="stack-lg">
      <h1 tabIndex={-1}>Credits</h1>
      <section class="card" aria-labelledby="balance-title">
        <h2 id="balance-title">Balance</h2>
        {balance.error !== undefined && balance.error !== null && (
          <ErrorMessage error={balance.error} title="Could not load the balance" onRetry={balance.reload} />
        )}
        {balance.loading && !balance.data && <Loading label="Loading the balance…" />}
        {balance.data && (
          <>
            <p class="balance">
              <span class="balance-value">{formatNumber(balance.data.balance)}</span> credits
            </p>
            <p class="muted small">
              A verification costs 1 credit; unknown results and repeats within 24 hours are free. Credits are
              granted by the operator (<code>mailprobe credits grant</code>).
            </p>
          </>
        )}
      </section>
      <UsageSection />
      <LedgerSection />
    </section>
  );
}

function UsageSection() {
  const [preset, setPreset] = useState("30");
  const [custom, setCustom] = useState<Range>(lastDays(30));
  const [source, setSource] = useState<"all" | "frontend" | "api_key" | "operator">("all");
  const [range, setRange] = useState<Range>(lastDays(30));
  const [rangeError, setRangeError] = useState<string | null>(null);

  const usage = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/credits/usage", {
          params: { query: { from: startOfDay(range.from), to: endOfDay(range.to), source } },
          signal,
        }),
      ),
    [range, source],
  );
  const perKey = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/credits/usage/api-keys", {
          params: { query: { from: startOfDay(range.from), to: endOfDay(range.to) } },
          signal,
        }),
      ),
    [range],
  );

  const points = usage.data ? pointsThrough(usage.data.series, range.to) : [];

  function apply(e: Event) {
    e.preventDefault();
    const next = preset === "custom" ? custom : lastDays(Number(preset));
    if (!next.from || !next.to || next.from > next.to) {
      setRangeError("Choose a start day on or before the end day.");
      return;
    }
    if (rangeDays(next) > MAX_RANGE_DAYS) {
      setRangeError(`A range covers at most ${MAX_RANGE_DAYS} days.`);
      return;
    }
    setRangeError(null);
    setRange(next);
  }

  return (
    <section class="card" aria-labelledby="usage-title">
      <h2 id="usage-title">Usage per day</h2>
      <form class="filters" onSubmit={apply} aria-label="Usage period">
        <div class="field">
          <label for="usage-period">Period</label>
          <select id="usage-period" value={preset} onChange={(e) => setPreset(e.currentTarget.value)}>
            <option value="7">Last 7 days</option>
            <option value="30">Last 30 days</option>
            <option value="90">Last 90 days</option>
            <option value="custom">Custom dates</option>
          </select>
        </div>
        {preset === "custom" && (
          <>
            <div class="field">
              <label for="usage-from">From</label>
              <input
                id="usage-from"
                type="date"
                value={custom.from}
                onInput={(e) => setCustom({ ...custom, from: e.currentTarget.value })}
              />
            </div>
            <div class="field">
              <label for="usage-to">To</label>
              <input
                id="usage-to"
                type="date"
                value={custom.to}
                onInput={(e) => setCustom({ ...custom, to: e.currentTarget.value })}
              />
            </div>
          </>
        )}
        <div class="field">
          <label for="usage-source">Made through</label>
          <select
            id="usage-source"
            value={source}
            onChange={(e) => setSource(e.currentTarget.value as typeof source)}
          >
            <option value="all">Everything</option>
            <option value="frontend">This dashboard</option>
            <option value="api_key">API keys</option>
            <option value="operator">Operator grants</option>
          </select>
        </div>
        <div class="filter-actions">
          <button type="submit">Show</button>
        </div>
      </form>
      {rangeError && (
        <p class="error" role="alert">
          {rangeError}
        </p>
      )}
      {usage.error !== undefined && usage.error !== null && (
        <ErrorMessage error={usage.error} title="Could not load usage" onRetry={usage.reload} />
      )}
      {usage.loading && !usage.data && <Loading label="Loading usage…" />}
      {usage.data && (
        <>
          <dl class="counts">
            <div>
              <dt>Used</dt>
              <dd>{formatNumber(usage.data.totals.used_credits)}</dd>
            </div>
            <div>
              <dt>Granted or refunded</dt>
              <dd>{formatNumber(usage.data.totals.granted_credits)}</dd>
            </div>
            <div>
              <dt>Your balance in this period</dt>
              <dd>{netText(usage.data.totals.net_credits)}</dd>
            </div>
          </dl>
          {points.every((p) => p.used_credits === 0 && p.granted_credits === 0) ? (
            <Empty title="No credit movement in this period.">
              <p>
                <a href={hrefOf.verify}>Verify an address</a> or <a href={hrefOf.lists}>a list</a>, or choose
                a longer period.
              </p>
            </Empty>
          ) : (
            <BarChart
              title={`Credits used and granted per day, ${formatDay(range.from)} to ${formatDay(range.to)}`}
              summary={`${plural(usage.data.totals.used_credits, "credit", "credits")} used and ${plural(
                usage.data.totals.granted_credits,
                "credit",
                "credits",
              )} granted over ${plural(points.length, "day", "days")}`}
              labels={points.map((p) => formatShortDay(p.date))}
              series={[
                { label: "Used", values: points.map((p) => p.used_credits), color: "--c-invalid" },
                {
                  label: "Granted",
                  values: points.map((p) => p.granted_credits),
                  color: "--c-valid",
                },
              ]}
            />
          )}
        </>
      )}
      <h3>By API key</h3>
      <p class="muted small">
        Credits spent through each key in the same period (work done in this dashboard is not counted here).
      </p>
      {perKey.error !== undefined && perKey.error !== null && (
        <ErrorMessage error={perKey.error} title="Could not load usage per key" onRetry={perKey.reload} />
      )}
      {perKey.loading && !perKey.data && <Loading label="Loading usage per key…" />}
      {perKey.data &&
        (perKey.data.keys.length === 0 ? (
          <p class="muted">
            No API key spent credits in this period. Keys are for integrations:{" "}
            <a href={hrefOf.keys}>create one</a>.
          </p>
        ) : (
          <div class="table-scroll" tabIndex={0} role="region" aria-label="Usage per API key table">
            <table class="cards">
              <caption class="visually-hidden">Usage per API key</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Purpose</th>
                  <th scope="col" class="num">
                    Used
                  </th>
                  <th scope="col" class="num">
                    Granted
                  </th>
                  <th scope="col" class="num">
                    Net
                  </th>
                </tr>
              </thead>
              <tbody>
                {perKey.data.keys.map((k) => (
                  <tr key={k.api_key_id ?? "unknown"}>
                    <th scope="row">
                      {k.is_unknown
                        ? "No key recorded (older rows)"
                        : (k.api_key_name ?? k.api_key_id ?? "—")}
                      {k.is_active === false && <span class="muted small"> (revoked)</span>}
                    </th>
                    <td data-label="Purpose">{k.api_key_purpose ?? "—"}</td>
                    <td data-label="Used" class="num">
                      {formatNumber(k.totals.used_credits)}
                    </td>
                    <td data-label="Granted" class="num">
                      {formatNumber(k.totals.granted_credits)}
                    </td>
                    <td data-label="Net" class="num">
                      {formatNumber(k.totals.net_credits)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ))}
    </section>
  );
}

function LedgerSection() {
  const [offset, setOffset] = useState(0);
  const ledger = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/credits/transactions", {
          params: { query: { limit: LEDGER_PAGE, offset } },
          signal,
        }),
      ),
    [offset],
  );
  return (
    <section class="card" aria-labelledby="ledger-title">
      <h2 id="ledger-title">Ledger</h2>
      <p class="muted small">
        Every credit movement, newest first. A list reserves its credits up front; unknown results come back
        as one refund when it finishes.
      </p>
      {ledger.error !== undefined && ledger.error !== null && (
        <ErrorMessage error={ledger.error} title="Could not load the ledger" onRetry={ledger.reload} />
      )}
      {ledger.loading && !ledger.data && <Loading label="Loading the ledger…" />}
      {ledger.data && ledger.data.total === 0 && (
        <Empty title="No credit movement yet.">
          <p>
            Ask the operator for credits, then <a href={hrefOf.verify}>verify an address</a>.
          </p>
        </Empty>
      )}
      {ledger.data && ledger.data.total > 0 && (
        <>
          <PagedTable
            region="Ledger table"
            caption="Credit transactions"
            head={
              <>
                <th scope="col">When</th>
                <th scope="col">What</th>
                <th scope="col" class="num">
                  Change
                </th>
                <th scope="col" class="num">
                  Balance after
                </th>
                <th scope="col">Made through</th>
              </>
            }
            page={{
              offset: offset,
              limit: LEDGER_PAGE,
              total: ledger.data.total,
              label: "Ledger pages",
              onChange: setOffset,
            }}
          >
            {ledger.data.transactions.map((t) => {
              const taskId = metaString(t, "task_id");
              const source = metaString(t, "source");
              const purpose = metaString(t, "api_key_purpose");
              return (
                <tr key={t.id}>
                  <td data-label="When">{formatDateTime(t.created_at)}</td>
                  <th scope="row">
                    {reasonText(t)}
                    {taskId && (
                      <>
                        {" · "}
                        <a href={hrefOf.task(taskId)}>view task</a>
                      </>
                    )}
                  </th>
                  <td data-label="Change" class={t.amount < 0 ? "num neg" : "num pos"}>
                    {t.amount > 0 ? "+" : ""}
                    {formatNumber(t.amount)}
                  </td>
                  <td data-label="Balance after" class="num">
                    {formatNumber(t.balance_after)}
                  </td>
                  <td data-label="Made through">
                    {source ? (SOURCE_TEXT[source] ?? source) : "—"}
                    {purpose ? ` (${purpose})` : ""}
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
