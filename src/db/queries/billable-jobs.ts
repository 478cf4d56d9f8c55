import { SANDBOX_DOMAIN } from "../../verify/index.ts";
import type { Queryable } from "../client.ts";

// Which batch jobs cost a credit, in SQL: the task's refunds count by it. The same rule in
// TypeScript (isBillable, isBillableAddress) is in tasks/billing.ts, which bills result writes by
// it; test/integration/tasks/billing-rule.test.ts holds the two equal on both engines.

/**
 * isBillableAddress over a job `j`. Job addresses are lowercase (canonical, or the lowercased
 * input of an RFC-invalid one) and the domain holds no `@`, `%` or `_`, so this LIKE is
 * isSandboxAddress, RFC-invalid addresses included (neither trims).
 */
const BILLABLE_ADDRESS_SQL = `j.email_address not like '%@${SANDBOX_DOMAIN}'`;

/** isBillable over a job `j` and its result `v`. */
export const BILLED_RESULT_SQL = `v.status <> 'unknown' and ${BILLABLE_ADDRESS_SQL}`;

/** Credits to return when a task finishes: billable jobs whose result is unknown, or that failed outright. */
export async function countUnbillableJobs(q: Queryable, taskId: string): Promise<number> {
  // Sandbox addresses were never reserved (tasks/billing.ts), so there is nothing to return for them.
  const { rows } = await q.query<{ n: number }>(
    `select count(*) as n
       from email_jobs j left join email_verifications v on v.id = j.email_id
      where j.task_id = $1 and (j.status = 'failed' or v.status = 'unknown')
        and ${BILLABLE_ADDRESS_SQL}`,
    [taskId],
  );
  return rows[0]?.n ?? 0;
}

/** Credits a task has delivered so far: completed jobs with a billed result. */
export async function countBillableJobs(q: Queryable, taskId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `select count(*) as n
       from email_jobs j join email_verifications v on v.id = j.email_id
      where j.task_id = $1 and j.status = 'completed' and ${BILLED_RESULT_SQL}`,
    [taskId],
  );
  return rows[0]?.n ?? 0;
}
