import { Type, type TLiteral, type TLiteralValue, type TOptional, type TSchema } from "typebox";
import {
  RESULT_FIELDS,
  resultFieldsJson,
  VERIFICATION_STATUSES,
  type ResultField,
  type ResultFieldKind,
  type ResultFieldValues,
} from "../../verify/index.ts";
import { DateTime, ErrorBodySchema, ref, Uuid } from "./common.ts";

export const VerifyBody = Type.Object(
  { email: Type.String({ maxLength: 320, description: "Address to verify (at most 320 characters)" }) },
  { additionalProperties: false },
);

type Literals<T extends readonly TLiteralValue[]> = {
  -readonly [I in keyof T]: T[I] extends TLiteralValue ? TLiteral<T[I]> : never;
};

// anyOf of one const per status; the tuple type keeps the static type the union of the statuses.
const statusSchema = () =>
  Type.Union(
    VERIFICATION_STATUSES.map((s) => Type.Literal(s)) as unknown as Literals<typeof VERIFICATION_STATUSES>,
  );

/** The API schema of each kind of result field (verify/result-fields.ts). */
const SCHEMA_OF_KIND = {
  string: () => Type.String(),
  status: statusSchema,
  boolean: () => Type.Boolean(),
  timestamp: () => DateTime,
  nullable_string: () => Type.Union([Type.String(), Type.Null()]),
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
