import { createHash } from "node:crypto";
import type { Principal } from "../auth/principal.ts";
import type { Database, Queryable, Transaction } from "../db/client.ts";
import { claimLaneOf, insertJobs, type NewJob } from "../db/queries/jobs.ts";
import {
  findIdempotentTask,
  findTask,
  insertTask,
  saveIdempotencyKey,
  type TaskRecord,
} from "../db/queries/tasks.ts";
import { endedCredential, findUser, lockUserBalance } from "../db/queries/users.ts";
import { AppError, notFound, validationError } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { groupDomainOf, isSandboxAddress, type Engine } from "../verify/index.ts";
import { creditsToReserve, reserveTaskCredits, type TaskCreditsShort } from "./billing.ts";

/** How long an Idempotency-Key is remembered (Stripe keeps them 24 h too). */
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
const IDEMPOTENCY_SCOPE = "tasks.create";
/** Job rows per insert statement (~0.1 s of PGlite each; the first of a process up to ~0.3 s). */
const JOBS_PER_STATEMENT = 500;

export interface CreateTaskInput {
  /**
   * Trimmed addresses as submitted (duplicates allowed; they are verified and billed once). Its
   * length is the task's `submitted_count` (the creation reply's `email_count`, the spec's "emails
   * submitted"); the distinct ones are the jobs, `unique_count` (the tasks.email_count column).
   */
  emails: string[];
  webhookUrl: string | null;
  /** Minutes after its start during which the task retries deferred addresses (0–1440). */
  retryWindowMinutes: number;
  idempotencyKey: string | null;
  /**
   * The key's scope and the fingerprint of the request it stands for; default: a JSON task's
   * (its addresses and webhook URL). An upload fingerprints its file and form instead.
   */
  idempotency?: { scope: string; requestHash: string };
  /** For file uploads: runs inside the creating transaction (upload row, original rows). */
  attach?: (tx: Transaction, task: TaskRecord) => Promise<void>;
  isFileBacked?: boolean;
}

export interface CreatedTask {
  task: TaskRecord;
  /** True when an earlier request with the same Idempotency-Key created it. */
  replayed: boolean;
}

interface PlannedJobs {
  jobs: NewJob[];
  domainCount: number;
  /** Jobs whose address fails RFC syntax: their result will be `invalid_syntax`. */
  invalidSyntaxCount: number;
  /** Jobs under the sandbox domain: answered for free, never reserved (verify/sandbox.ts). */
  sandboxCount: number;
}

/**
 * One job per distinct canonical address, in first-occurrence order, each with its claim lane:
 * the first CLAIM_FIRST_CHUNK of a domain go before any domain's bulk.
 */
function planJobs(engine: Pick<Engine, "checkSyntax">, emails: string[]): PlannedJobs {
  const seen = new Set<string>();
  /** Jobs so far per group domain ("" for addresses without one, ranked like any other). */
  const perDomain = new Map<string, number>();
  const jobs: NewJob[] = [];
  let invalidSyntaxCount = 0;
  let sandboxCount = 0;
  for (const email of emails) {
    const syntax = engine.checkSyntax(email);
    const canonical = syntax.ok ? syntax.canonical : email.toLowerCase();
    if (seen.has(canonical)) continue;
    seen.add(canonical);
    const domain = groupDomainOf(syntax);
    const rank = perDomain.get(domain) ?? 0;
    perDomain.set(domain, rank + 1);
    if (!syntax.ok) invalidSyntaxCount += 1;
    if (isSandboxAddress(canonical)) sandboxCount += 1;
    jobs.push({
      id: newId(),
      position: jobs.length,
      emailAddress: canonical,
      domain,
      claimLane: claimLaneOf(rank),
    });
  }
  const domainCount = perDomain.size - (perDomain.has("") ? 1 : 0);
  return { jobs, domainCount, invalidSyntaxCount, sandboxCount };
}

/** What creating a task would count and cost, and the balance it would be paid from (a dry run). */
export interface TaskQuote {
  /** Entries submitted, duplicates included (`submitted_count`; a JSON task's `email_count`). */
  submittedCount: number;
  /** Distinct canonical addresses: the jobs (`unique_count`; an upload's `email_count`). */
  uniqueCount: number;
  domainCount: number;
  invalidSyntaxCount: number;
  sandboxCount: number;
  creditsRequired: number;
  /** The user's balance now; creation would need at least creditsRequired. */
  balance: number;
}

/**
 * A dry run of createTask on the same plan (so the figures cannot differ from the real call's),
 * writing nothing: no lock, no task, no reservation, no idempotency record. The balance is read
 * unlocked; the real call may still answer 402 if it is spent in between.
 */
export async function quoteTask(
  db: Queryable,
  engine: Pick<Engine, "checkSyntax">,
  principal: Principal,
  emails: string[],
): Promise<TaskQuote> {
  const planned = planJobs(engine, emails);
  const user = await findUser(db, principal.userId);
  if (!user) throw notFound("User");
  return {
    submittedCount: emails.length,
    uniqueCount: planned.jobs.length,
    domainCount: planned.domainCount,
    invalidSyntaxCount: planned.invalidSyntaxCount,
    sandboxCount: planned.sandboxCount,
    creditsRequired: creditsToReserve(planned.jobs),
    balance: user.balance,
  };
}

/**
 * The task an earlier request with this Idempotency-Key created, read outside any transaction so
 * a retry is answered before its work is redone; null when there is none. A key reused with a
 * different request is a 400. createTask checks again under the user's lock.
 */
export async function findIdempotentReplay(
  db: Queryable,
  clock: Clock,
  principal: Principal,
  k: { scope: string; key: string; requestHash: string },
): Promise<string | null> {
  const since = new Date(clock.now().getTime() - IDEMPOTENCY_WINDOW_MS);
  const prior = await findIdempotentTask(db, principal.userId, k.scope, k.key, since);
  if (!prior) return null;
  if (prior.requestHash !== k.requestHash) throw reusedKey();
  if (prior.taskId === null) throw keyOfDeletedTask();
  return prior.taskId;
}

const credentialEnded = (what: "user" | "key"): AppError =>
  new AppError(
    "UNAUTHORIZED",
    what === "user"
      ? "This account was deactivated while the request was in progress; nothing was created"
      : "This API key was revoked while the request was in progress; nothing was created",
  );

/** The task this key created was deleted since: a retry must not create (and bill) another. */
const keyOfDeletedTask = (): AppError =>
  new AppError(
    "CONFLICT",
    "The task created with this Idempotency-Key has been deleted; to create a new task, send the request with a new Idempotency-Key",
    [{ field: "Idempotency-Key", reason: "its task was deleted" }],
  );

const reusedKey = (): AppError =>
  validationError("Idempotency-Key was already used with a different request", [
    { field: "Idempotency-Key", reason: "reused with a different body" },
  ]);

const requestHashOf = (emails: string[], webhookUrl: string | null, retryWindowMinutes: number): string =>
  createHash("sha256")
    .update(JSON.stringify([emails, webhookUrl, retryWindowMinutes]))
    .digest("hex");

/**
 * Creates a task: the task row, its job rows and the credit reservation for every job commit in
 * one transaction, so a task exists only if it is paid for.
 */
export async function createTask(
  db: Database,
  clock: Clock,
  engine: Pick<Engine, "checkSyntax">,
  principal: Principal,
  input: CreateTaskInput,
): Promise<CreatedTask | TaskCreditsShort> {
  const planned = planJobs(engine, input.emails);
  const scope = input.idempotency?.scope ?? IDEMPOTENCY_SCOPE;
  const requestHash =
    input.idempotency?.requestHash ?? requestHashOf(input.emails, input.webhookUrl, input.retryWindowMinutes);
  try {
    return await db.transaction((tx) =>
      createIn(tx, clock, principal, input, planned, { scope, requestHash }),
    );
  } catch (error) {
    // Short of credits: the transaction rolled back, so the task and its jobs were never written.
    if (error instanceof CreditsShort) return error.denial;
    throw error;
  }
}

/** Thrown inside the creating transaction to roll it back; createTask answers its denial. */
class CreditsShort extends Error {
  constructor(readonly denial: TaskCreditsShort) {
    super("insufficient credits");
  }
}

async function createIn(
  tx: Transaction,
  clock: Clock,
  principal: Principal,
  input: CreateTaskInput,
  planned: PlannedJobs,
  { scope, requestHash }: { scope: string; requestHash: string },
): Promise<CreatedTask> {
  const now = clock.now();
  // The user lock serialises task creation per user, so two retries carrying one
  // Idempotency-Key cannot both miss the key and both create (and bill) a task.
  if ((await lockUserBalance(tx, principal.userId)) === null) throw notFound("User");
  // Authenticated before the body was read and parsed (seconds for an upload): a deactivation
  // or revocation meanwhile has stopped the user's work (stop-work.ts) and must not miss this.
  const ended = await endedCredential(
    tx,
    principal.userId,
    principal.apiKeyId ?? principal.sessionKeyId ?? null,
  );
  if (ended) throw credentialEnded(ended);
  if (input.idempotencyKey) {
    const since = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
    const prior = await findIdempotentTask(tx, principal.userId, scope, input.idempotencyKey, since);
    if (prior) {
      if (prior.requestHash !== requestHash) throw reusedKey();
      if (prior.taskId === null) throw keyOfDeletedTask();
      const task = await findTask(tx, prior.taskId);
      if (task) return { task, replayed: true };
    }
  }
  const task = await insertTask(tx, {
    id: newId(),
    userId: principal.userId,
    webhookUrl: input.webhookUrl,
    source: principal.source,
    apiKeyId: principal.apiKeyId,
    emailCount: planned.jobs.length,
    submittedCount: input.emails.length,
    domainCount: planned.domainCount,
    isFileBacked: input.isFileBacked ?? false,
    createdAt: now,
    retryWindowMinutes: input.retryWindowMinutes,
  });
  // Sandbox addresses (verify/sandbox.ts) are never reserved nor charged; the refund on finish
  // leaves them out too. A task of only sandbox addresses writes no ledger row.
  const short = await reserveTaskCredits(tx, principal, task.id, creditsToReserve(planned.jobs), now);
  if (short) throw new CreditsShort(short);
  // PGlite runs each statement on the server's own thread: 5,000 jobs in one insert held it for
  // 1.4 s. In steps of JOBS_PER_STATEMENT the event loop answers others in between.
  for (let from = 0; from < planned.jobs.length; from += JOBS_PER_STATEMENT) {
    await insertJobs(tx, task.id, principal.userId, planned.jobs.slice(from, from + JOBS_PER_STATEMENT), now);
    await yieldToEventLoop();
  }
  if (input.attach) await input.attach(tx, task);
  if (input.idempotencyKey) {
    await saveIdempotencyKey(tx, {
      userId: principal.userId,
      scope,
      key: input.idempotencyKey,
      requestHash,
      taskId: task.id,
      at: now,
    });
  }
  return { task, replayed: false };
}
