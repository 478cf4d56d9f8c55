// The one table of a verification result's public fields (the spec's "Email verification
// result"). The stored record, the JSON result, the API schema, the download columns and the CLI
// are all made from it: a new field is one line here (plus its column in a migration).
import { CHECK_NAMES, type CheckName, type ResultChecks, type VerificationResult } from "./types.ts";

/**
 * How a field's value is written. Per kind, not per field: the JSON value, the file cell
 * (csv/txt write its text, xlsx keeps booleans typed), the API schema (http/schemas) and the SQL
 * array type (db/queries) all follow from it.
 */
export type ResultFieldKind = "string" | "status" | "boolean" | "timestamp" | "nullable_string" | "checks";

// The kind a value type must have: a field declared with the wrong kind does not compile.
type KindOf<T> = [T] extends [ResultChecks]
  ? "checks"
  : [T] extends [boolean]
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
  // Beyond the spec, after its fields so that their order stays as it is.
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
  extension(
    "checks",
    "checks",
    "checks",
    "Per-check status (the spec's per-check status when some checks succeed and others fail): `syntax`, `dns` (the domain's records could be looked up), `mx` (a mail host exists), `reverse_dns` (the mail host's IP has a PTR), `smtp` (what the mail server said about this recipient). Each is `passed`, `failed` (a definite no), `error` (no answer: timeout, SERVFAIL, a refused session) or `skipped` (not run), with a short `reason`. `has_mx_records: false` with `checks.dns.status` `error` means the lookup failed, not that the domain has no MX.",
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

/** A field's value as JSON: timestamps become ISO strings, every other kind is sent as it is. */
const jsonOf = (kind: ResultFieldKind, value: unknown): unknown =>
  kind === "timestamp" ? (value as Date).toISOString() : value;

/** A column of a results file and how its cell is made from a result. */
export interface ResultColumn {
  name: ResultColumnName;
  cell(r: ResultFieldValues): ResultCell;
}

/** The file column of each check: `check_syntax`, `check_dns`, …; its cell is the check's status. */
export type CheckColumnName = `check_${CheckName}`;
export type ResultColumnName = Exclude<ResultFieldName, "checks"> | CheckColumnName;

type ScalarField = Exclude<ResultField, { kind: "checks" }>;
const isScalar = (f: ResultField): f is ScalarField => f.kind !== "checks";

const scalarCell = (f: ScalarField, v: unknown): ResultCell => {
  switch (f.kind) {
    case "boolean":
      return v as boolean;
    case "timestamp":
      return (v as Date).toISOString();
    case "nullable_string":
      return (v as string | null) ?? "";
    default:
      return v as string;
  }
};

const scalarColumn = (f: ScalarField): ResultColumn => ({
  name: f.name,
  cell: (r) => scalarCell(f, r[f.key]),
});

/**
 * The download columns (DESIGN §5): the table's order with timestamps moved to the end
 * (`validated_at` after `needs_physical_verify`, while the API lists it after `is_catchall`),
 * then one column per check (its status; the reasons are in the JSON result). Both orders are
 * public, so neither is changed to match the other; the check columns came last so that readers
 * that count columns keep working.
 */
export const FILE_COLUMNS: readonly ResultColumn[] = [
  ...RESULT_FIELDS.filter(isScalar)
    .filter((f) => f.kind !== "timestamp")
    .map(scalarColumn),
  ...RESULT_FIELDS.filter(isScalar)
    .filter((f) => f.kind === "timestamp")
    .map(scalarColumn),
  ...CHECK_NAMES.map((check): ResultColumn => ({
    name: `check_${check}`,
    cell: (r) => r.checks[check].status,
  })),
];

/** The columns with these names, in the order given (a view of some columns: txt, the CLI's table). */
export const columnsNamed = (names: readonly ResultColumnName[]): ResultColumn[] =>
  names.flatMap((name) => FILE_COLUMNS.filter((c) => c.name === name));

/** Just the result fields of an engine result or a stored record. */
export const pickResultFields = (r: ResultFieldValues): ResultFieldValues =>
  Object.fromEntries(RESULT_FIELDS.map((f) => [f.key, r[f.key]])) as unknown as ResultFieldValues;

/** The spec's result fields as JSON, in the table's order. */
export const resultFieldsJson = (r: ResultFieldValues): ResultJson =>
  Object.fromEntries(RESULT_FIELDS.map((f) => [f.name, jsonOf(f.kind, r[f.key])])) as ResultJson;

/** The file cells of a result, by column name. */
export type ResultCells = Partial<Record<ResultColumnName, ResultCell>>;

export const resultCells = (r: ResultFieldValues): Record<ResultColumnName, ResultCell> =>
  Object.fromEntries(FILE_COLUMNS.map((c) => [c.name, c.cell(r)])) as Record<ResultColumnName, ResultCell>;

/** `cells` laid out as `columns` (FILE_COLUMNS by default); a column without a cell is blank. */
export const cellsInOrder = (
  cells: ResultCells,
  columns: readonly ResultColumn[] = FILE_COLUMNS,
): ResultCell[] => columns.map((c) => cells[c.name] ?? "");
