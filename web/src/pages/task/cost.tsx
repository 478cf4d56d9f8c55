// What the task cost: its ledger rows (reservation, refunds, late charges).
import type { CreditTransaction, Task } from "@mailprobe/client";
import { client, request } from "../../api.ts";
import { ErrorMessage, Loading } from "../../components/feedback.tsx";
import { useApi } from "../../hooks.ts";
import { plural } from "../../lib/format.ts";
import { hrefOf } from "../../router.ts";

const LEDGER_PAGE = 100;
/** A task has a handful of ledger rows; late charges after a cancel add one per running group. */
const LEDGER_MAX_PAGES = 10;

/** A task's ledger rows, every page: a reservation, its refunds, and late charges after a cancel. */
async function ledgerOfTask(taskId: string, signal: AbortSignal): Promise<CreditTransaction[]> {
  const rows: CreditTransaction[] = [];
  for (let page = 0; page < LEDGER_MAX_PAGES; page++) {
    const { transactions, total } = await request(
      client.GET("/api/v1/credits/transactions", {
        params: { query: { task_id: taskId, limit: LEDGER_PAGE, offset: page * LEDGER_PAGE } },
        signal,
      }),
    );
    rows.push(...transactions);
    if (rows.length >= total || transactions.length === 0) break;
  }
  return rows;
}

export function CostSection({ task, refreshKey }: { task: Task; refreshKey: number }) {
  const ledger = useApi((signal) => ledgerOfTask(task.id, signal), [task.id, refreshKey]);
  const running = task.finished_at === null;
  const rows = ledger.data ?? [];
  const charged = rows.reduce((n, r) => n + (r.amount < 0 ? -r.amount : 0), 0);
  const refunded = rows.reduce((n, r) => n + (r.amount > 0 ? r.amount : 0), 0);
  return (
    <section class="card" aria-labelledby="cost-title">
      <h2 id="cost-title">Cost</h2>
      {ledger.error !== undefined && ledger.error !== null && (
        <ErrorMessage
          error={ledger.error}
          title="Could not load this task's credits"
          onRetry={ledger.reload}
        />
      )}
      {ledger.loading && !ledger.data && <Loading label="Loading this task's credits…" />}
      {ledger.data && (
        <>
          <dl class="counts">
            <div>
              <dt>Charged</dt>
              <dd>{plural(charged, "credit", "credits")}</dd>
            </div>
            <div>
              <dt>Refunded</dt>
              <dd>{plural(refunded, "credit", "credits")}</dd>
            </div>
            <div>
              <dt>{running ? "Cost so far" : "Cost"}</dt>
              <dd>{plural(charged - refunded, "credit", "credits")}</dd>
            </div>
          </dl>
          <p class="muted small">
            A list reserves one credit per distinct address when it starts.{" "}
            {running
              ? "Unknown results and failures are refunded together when it finishes."
              : "Unknown results, failures and addresses dropped by a cancel were refunded."}{" "}
            <a href={hrefOf.credits}>All your credit movements</a>
          </p>
        </>
      )}
    </section>
  );
}
