// The prices of POST /api/v1/tasks and POST /api/v1/tasks/batch/upload, as operations of their
// own (DESIGN §5 "Task lifecycle": a quote prices a task or upload without creating it). Not a
// `?dry_run=true` 200 beside the real 201/202: two success bodies on one operation make
// generated clients type the real answer as the price (or validate it against the price and
// throw). The figures come from the same planning code as the real call
// (tasks/create-task.ts), so the two cannot disagree.
import { Type } from "typebox";
import { validationError, type AppError } from "../../lib/app-error.ts";
import type { TaskQuote } from "../../tasks/service.ts";
import type { UploadQuote } from "../../uploads/service.ts";

/** Where each creating operation's price now lives. */
export const QUOTE_PATH = {
  task: "POST /api/v1/tasks/quote",
  upload: "POST /api/v1/tasks/batch/upload/quote",
} as const;

/**
 * The 400 for `dry_run` on a creating operation. A parameter the server no longer reads must not
 * be ignored (the call would create and bill what the caller only wanted priced), and the
 * generic "unknown parameter" would not say where the price went.
 */
export const dryRunMoved = (moved: keyof typeof QUOTE_PATH): AppError =>
  validationError(`dry_run is no longer accepted here: ask ${QUOTE_PATH[moved]} for the price`, [
    {
      field: "dry_run",
      reason: `was replaced by ${QUOTE_PATH[moved]} (same request, answers the price and creates nothing)`,
    },
  ]);

/**
 * The query a creating operation validates: only `dry_run`, so that it can be refused by name
 * (dryRunMoved); every other parameter is the usual 400. The document shows no parameter.
 */
export const CreateQuery = Type.Object(
  { dry_run: Type.Optional(Type.String()) },
  { additionalProperties: false },
);

const quoteProperties = {
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

export const TaskQuoteReply = Type.Object(quoteProperties, {
  $id: "TaskQuote",
  description: "What `POST /api/v1/tasks` would create and reserve for the same body; nothing was created",
});

export const UploadQuoteReply = Type.Object(
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
    $id: "UploadQuote",
    description:
      "What `POST /api/v1/tasks/batch/upload` would create and reserve for the same form; nothing was created or stored",
  },
);

export const toTaskQuoteReply = (q: TaskQuote) => ({
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

export const toUploadQuoteReply = (filename: string, q: UploadQuote) => ({
  ...toTaskQuoteReply(q),
  // An upload's email_count is "emails queued" (spec): the distinct addresses.
  email_count: q.uniqueCount,
  filename,
  skipped_count: q.skippedCount,
  sheet: q.sheet,
  email_column: q.emailColumn,
});
