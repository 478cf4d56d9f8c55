import { Type, type TOptional, type TSchema } from "typebox";
import {
  CHECK_NAMES,
  CHECK_STATUSES,
  RESULT_FIELDS,
  resultFieldsJson,
  type ResultField,
  type ResultFieldKind,
  type ResultFieldValues,
} from "../../verify/index.ts";
import { DateTime, documented, ErrorBodySchema, ref, StringEnum, Uuid } from "./common.ts";
import { VerificationStatusSchema } from "./enums.ts";

export const VerifyBody = Type.Object(
  { email: Type.String({ maxLength: 320, description: "Address to verify (at most 320 characters)" }) },
  { additionalProperties: false },
);

/** As the document states it: readRealtimeEmail answers an empty (or blank) email with its own reason. */
export const VerifyBodyDocumented = documented(VerifyBody, {
  email: Type.String({ ...VerifyBody.properties.email, minLength: 1 }),
});

// The named `VerificationStatus` enum (not an anyOf of one-value enums, which generators turn
// into a union of single-value types); it serialises to the same string.
const statusSchema = () => ref(VerificationStatusSchema);

/** One check's outcome (verify/checks.ts; the reasons are docs/checks.md). */
export const CheckSchema = Type.Object(
  {
    status: StringEnum(
      CHECK_STATUSES,
      "`passed`: ran, answer yes; `failed`: ran, a definite no; `error`: ran, no answer (timeout, SERVFAIL, refused session); `skipped`: not run",
    ),
    reason: Type.Union([Type.String(), Type.Null()], {
      description:
        "Why, as a short snake_case word (e.g. `nxdomain`, `null_mx`, `timeout`, `mailbox_missing`); null when nothing needs saying",
    }),
  },
  { $id: "Check", additionalProperties: false, description: "The outcome of one check of a verification" },
);

/** The five checks of a result, in the order they run. */
export const ResultChecksSchema = Type.Object(
  Object.fromEntries(CHECK_NAMES.map((name) => [name, ref(CheckSchema)])) as Record<
    (typeof CHECK_NAMES)[number],
    ReturnType<typeof ref<typeof CheckSchema>>
  >,
  {
    $id: "ResultChecks",
    additionalProperties: false,
    description:
      "Per-check status: `syntax`, `dns` (the domain's records could be looked up), `mx` (a mail host exists), `reverse_dns` (the mail host's IP has a PTR record), `smtp` (what the mail server said about this recipient)",
  },
);

/** The API schema of each kind of result field (verify/result-fields.ts). */
const SCHEMA_OF_KIND = {
  string: () => Type.String(),
  status: statusSchema,
  boolean: () => Type.Boolean(),
  timestamp: () => DateTime,
  nullable_string: () => Type.Union([Type.String(), Type.Null()]),
  checks: () => ref(ResultChecksSchema),
} satisfies Record<ResultFieldKind, () => unknown>;

type KindSchema<F extends ResultField> = ReturnType<(typeof SCHEMA_OF_KIND)[F["kind"]]>;

// The spec's fields are required; the ones beyond it are optional, described, and always sent.
type ResultProperties = {
  [F in ResultField as F["name"]]: F["extension"] extends null ? KindSchema<F> : TOptional<KindSchema<F>>;
};

const propertyOf = (f: ResultField): TSchema => {
  if (f.extension === null) return SCHEMA_OF_KIND[f.kind]();
  const base: TSchema = SCHEMA_OF_KIND[f.kind]();
  return Type.Optional({ ...base, description: f.extension.description });
};

/** The spec's "Email verification result": `id`, then the result fields in the table's order. */
export const VerificationReply = Type.Object(
  {
    id: Uuid,
    ...(Object.fromEntries(RESULT_FIELDS.map((f) => [f.name, propertyOf(f)])) as ResultProperties),
  },
  {
    $id: "VerificationResult",
    description:
      "The verdict on one address and the signals behind it (syntax, disposable and role lists, MX, reverse DNS, SMTP). `unknown_reason` is set when `status` is `unknown`.",
  },
);

export const toVerificationReply = (r: ResultFieldValues & { id: string }) => ({
  id: r.id,
  ...resultFieldsJson(r),
});

/** 408: the error body plus the partial result (DESIGN.md §5). */
export const TimeoutReply = Type.Intersect(
  [ref(ErrorBodySchema), Type.Object({ result: ref(VerificationReply) })],
  {
    $id: "VerificationTimeoutError",
    description:
      "VERIFICATION_TIMEOUT: the Error envelope plus `result`, the partial result (status `unknown`, `unknown_reason` naming the step that ran out of time)",
  },
);
