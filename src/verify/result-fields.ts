// The one table of a verification result's public fields (the spec's "Email verification
// result"). The stored record, the JSON result, the API schema, the download columns and the CLI
// are all made from it: a new field is one line here (plus its column in a migration).
import type { VerificationResult } from "./types.ts";

/**
 * How a field's value is written. Per kind, not per field: the JSON value, the file cell
 * (csv/txt write its text, xlsx keeps booleans typed), the API schema (http/schemas) and the SQL
 * array type (db/queries) all follow from it.
 */
export type ResultFieldKind = "string" | "status" | "boolean" | "timestamp" | "nullable_string";

// The kind a value type must have: a field declared with the wrong kind does not compile.
type KindOf<T> = [T] extends [boolean]
  ? "boolean"
  : [T] extends [Date]
    ? "timestamp"
    : [T] extends [VerificationResult["status"]]
      ? "status"
      : [T] extends [string]
        ? "string"
        : [T] extends [string | null]
          ? "nullable_string"
          : never;

const field = <K extends keyof VerificationResult, N extends string>(
  key: K,
  name: N,
  kind: KindOf<VerificationResult[K]>,
) => ({ key, name, kind, extension: null }) as const;

/**
 * A field beyond the spec's: always written, but optional in the API schema (clients made from an
 * older document, or talking to an older server, do without it), and described there.
 */
const extension = <K extends keyof VerificationResult, N extends string>(
  key: K,
  name: N,
  kind: KindOf<VerificationResult[K]>,
  description: string,
) => ({ key, name, kind, extension: { description } }) as const;

/**
 * The result fields in the spec's (and the API's) order. `key` is the engine's property, `name`
 * the snake_case JSON key, download column header and `email_verifications` column.
 */
export const RESULT_FIELDS = [
  field("email", "email", "string"),
  field("status", "status", "status"),
  field("isRoleBased", "is_role_based", "boolean"),
  field("isDisposable", "is_disposable", "boolean"),
  field("hasMxRecords", "has_mx_records", "boolean"),
  field("hasReverseDns", "has_reverse_dns", "boolean"),
  field("domainName", "domain_name", "string"),
  field("hostName", "host_name", "string"),
  field("serverType", "server_type", "string"),
  field("isCatchall", "is_catchall", "boolean"),
  field("validatedAt", "validated_at", "timestamp"),
  field("unknownReason", "unknown_reason", "nullable_string"),
  field("needsPhysicalVerify", "needs_physical_verify", "boolean"),
  // Beyond the spec (issue 13), after its fields so that their order stays as it is.
  extension(
    "didYouMean",
    "did_you_mean",
    "nullable_string",
    "The address with its domain corrected when the domain looks like a typo of a popular mail domain (gmial.com → gmail.com) and cannot receive mail itself (no such domain, no MX and no address, null MX, or disposable); null otherwise. Never set for a domain that receives mail.",
  ),
  extension(
    "isFreeProvider",
    "is_free_provider",
    "boolean",
    "The domain is a free (consumer) mailbox provider such as gmail.com, outlook.com or yahoo.com (from the email-providers list). false for a disposable domain and for a domain that cannot receive mail.",
  ),
] as const;

export type ResultField = (typeof RESULT_FIELDS)[number];
export type ResultFieldKey = ResultField["key"];
export type ResultFieldName = ResultField["name"];

/** The result fields of an engine result or a stored record (no `evidence`, no retry hint). */
export type ResultFieldValues = Pick<VerificationResult, ResultFieldKey>;

type JsonOf<T> = T extends Date ? string : T;

/** The result fields as JSON (snake_case keys, timestamps in RFC 3339). */
export type ResultJson = { [F in ResultField as F["name"]]: JsonOf<VerificationResult[F["key"]]> };

/** A cell of a results file: csv/txt write its text ("true"/"false" for booleans), xlsx keeps the type. */
export type ResultCell = string | boolean;

// `value` is the field's value; the table's KindOf check guarantees it has the kind's type.
const KINDS = {
  string: { json: (v) => v, cell: (v) => v as string },
  status: { json: (v) => v, cell: (v) => v as string },
  boolean: { json: (v) => v, cell: (v) => v as boolean },
  timestamp: { json: (v) => (v as Date).toISOString(), cell: (v) => (v as Date).toISOString() },
  nullable_string: { json: (v) => v, cell: (v) => (v as string | null) ?? "" },
} satisfies Record<ResultFieldKind, { json(v: unknown): unknown; cell(v: unknown): ResultCell }>;

/**
 * The download columns (DESIGN §5): the table's order with timestamps moved to the end
 * (`validated_at` is the last column of a results file, while the API lists it after
 * `is_catchall`). Both orders are public, so neither is changed to match the other.
 */
export const FILE_FIELDS: readonly ResultField[] = [
  ...RESULT_FIELDS.filter((f) => f.kind !== "timestamp"),
  ...RESULT_FIELDS.filter((f) => f.kind === "timestamp"),
];

/** The fields with these names, in the order given (a view of some columns: txt, the CLI's table). */
export const fieldsNamed = (names: readonly ResultFieldName[]): ResultField[] =>
  names.flatMap((name) => RESULT_FIELDS.filter((f) => f.name === name));

/** Just the result fields of an engine result or a stored record. */
export const pickResultFields = (r: ResultFieldValues): ResultFieldValues =>
  Object.fromEntries(RESULT_FIELDS.map((f) => [f.key, r[f.key]])) as unknown as ResultFieldValues;

/** The spec's result fields as JSON, in the table's order. */
export const resultFieldsJson = (r: ResultFieldValues): ResultJson =>
  Object.fromEntries(RESULT_FIELDS.map((f) => [f.name, KINDS[f.kind].json(r[f.key])])) as ResultJson;

/** The file cells of a result, by field. */
export const resultCells = (r: ResultFieldValues): Record<ResultFieldKey, ResultCell> =>
  Object.fromEntries(RESULT_FIELDS.map((f) => [f.key, KINDS[f.kind].cell(r[f.key])])) as Record<
    ResultFieldKey,
    ResultCell
  >;

/** `cells` laid out as `fields` (FILE_FIELDS by default); a field without a cell is blank. */
export const cellsInOrder = (
  cells: Partial<Record<ResultFieldKey, ResultCell>>,
  fields: readonly ResultField[] = FILE_FIELDS,
): ResultCell[] => fields.map((f) => cells[f.key] ?? "");
