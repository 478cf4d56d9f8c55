// The dry runs of POST /api/v1/tasks and POST /api/v1/tasks/batch/upload (DESIGN §5 "Task
// lifecycle": dry runs price a task or upload without creating it). The figures come from the
// same planning code as the real call (tasks/create-task.ts), so the two cannot disagree.
import { Type } from "typebox";
import type { TaskQuote } from "../../tasks/service.ts";
import type { UploadQuote } from "../../uploads/service.ts";

const DRY_RUN_DESCRIPTION =
  "`true`: answer 200 with the counts, the credits required and the balance, and create nothing (no task, jobs, reservation, upload or Idempotency-Key record). Input errors are the same as the real call's; too little credit is not an error here.";

export const DryRunQuery = Type.Object(
  {
    dry_run: Type.Optional(Type.Boolean({ default: false, description: DRY_RUN_DESCRIPTION })),
  },
  { additionalProperties: false },
);

const quoteProperties = {
  dry_run: Type.Literal(true),
  email_count: Type.Integer({
    description:
      "As the real call's reply: for a JSON task the entries submitted (= submitted_count), for an upload the distinct addresses that would be queued (= unique_count)",
  }),
  submitted_count: Type.Integer({ description: "Addresses submitted, duplicates included" }),
  unique_count: Type.Integer({ description: "Distinct canonical addresses: the jobs that would be queued" }),
  duplicate_count: Type.Integer({ description: "Entries repeating an earlier address (verified once)" }),
  domain_count: Type.Integer({ description: "Distinct domains among the valid addresses" }),
  invalid_syntax_count: Type.Integer({
    description: "Distinct addresses failing RFC syntax: billed results `invalid_syntax`, no SMTP",
  }),
  sandbox_count: Type.Integer({ description: "Distinct sandbox addresses: answered for free" }),
  credits_required: Type.Integer({
    description: "Credits the real call would reserve: unique_count − sandbox_count",
  }),
  balance: Type.Integer({ description: "The caller's balance now" }),
  has_enough_credits: Type.Boolean({
    description: "balance ≥ credits_required; when false the real call answers 402",
  }),
};

export const TaskDryRunReply = Type.Object(quoteProperties, {
  $id: "TaskDryRun",
  description: "What `POST /api/v1/tasks` would create and reserve; nothing was created",
});

export const UploadDryRunReply = Type.Object(
  {
    ...quoteProperties,
    filename: Type.String({ description: "Original file name" }),
    skipped_count: Type.Integer({
      description: "Rows whose email cell is blank or not an address: they would get no job",
    }),
    sheet: Type.Union([Type.String(), Type.Null()], {
      description:
        "xlsx: the sheet the list would be read from (the `sheet` field, or the one chosen); null for csv and txt",
    }),
    email_column: Type.String({
      description:
        "The email column: its header as written, or `column N` (1-based) for a list without a header row",
    }),
  },
  {
    $id: "UploadDryRun",
    description: "What uploading this file would create and reserve; nothing was created or stored",
  },
);

export const toTaskDryRunReply = (q: TaskQuote) => ({
  dry_run: true as const,
  // The same email_count as the real reply: a JSON task's is "emails submitted" (spec).
  email_count: q.submittedCount,
  submitted_count: q.submittedCount,
  unique_count: q.uniqueCount,
  duplicate_count: q.submittedCount - q.uniqueCount,
  domain_count: q.domainCount,
  invalid_syntax_count: q.invalidSyntaxCount,
  sandbox_count: q.sandboxCount,
  credits_required: q.creditsRequired,
  balance: q.balance,
  has_enough_credits: q.balance >= q.creditsRequired,
});

export const toUploadDryRunReply = (filename: string, q: UploadQuote) => ({
  ...toTaskDryRunReply(q),
  // An upload's email_count is "emails queued" (spec): the distinct addresses.
  email_count: q.uniqueCount,
  filename,
  skipped_count: q.skippedCount,
  sheet: q.sheet,
  email_column: q.emailColumn,
});
