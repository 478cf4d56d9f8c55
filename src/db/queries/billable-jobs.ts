import { isSandboxAddress, SANDBOX_DOMAIN, type VerificationStatus } from "../../verify/index.ts";
import type { Queryable } from "../client.ts";

// Which batch jobs cost a credit, once in TypeScript and once in SQL, side by side: the worker
// pool (jobs/) charges by the first, the task's refunds (tasks/billing.ts) count by the second,
// and test/integration/tasks/billing-rule.test.ts holds them equal on both engines. It lives in
// db/ because both jobs/ and tasks/ use it and neither may import the other.

/** An address whose verification costs a credit: every one but the sandbox's (verify/sandbox.ts). */
export const isBillableAddress = (emailAddress: string): boolean => !isSandboxAddress(emailAddress);

/** A recorded batch result that costs a credit: an answer other than unknown, for a billable address. */
export const isBillable = (emailAddress: string, status: VerificationStatus): boolean =>
  status !== "unknown" && isBillableAddress(emailAddress);

/**
 * isBillableAddress over a job `j`. Job addresses are lowercase (canonical, or the lowercased
 * input of an RFC-invalid one) and the domain holds no `@`, `%` or `_`, so this LIKE is
 * isSandboxAddress, RFC-invalid addresses included (neither trims).
 */
export const BILLABLE_ADDRESS_SQL = `j.email_address not like '%@${SANDBOX_DOMAIN}'`;

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
