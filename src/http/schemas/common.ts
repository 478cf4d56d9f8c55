import { Type, type Static, type TObject, type TSchema } from "typebox";
import type { ErrorCode } from "../../lib/app-error.ts";
import { MAX_WEBHOOK_URL_LENGTH } from "../../webhooks/url-policy.ts";
import { STATUS_BY_CODE } from "../errors.ts";
import { ErrorCodeSchema } from "./enums.ts";

/**
 * A `$ref` to a named schema (one created with a `$id` and listed in openapi.ts COMPONENTS),
 * typed as the schema itself. fast-json-stringify follows the reference, so a response
 * serialises to the same bytes as with the schema inlined; the OpenAPI document shows it as
 * `#/components/schemas/<$id>`. Request schemas stay inline: the size checks of
 * plugins/validation.ts read them without following references.
 */
export function ref<T extends TSchema>(schema: T, description?: string) {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== "string") throw new Error("ref() needs a schema with a $id");
  return Type.Unsafe<Static<T>>({ $ref: `${id}#`, ...(description ? { description } : {}) });
}

const FieldErrorSchema = Type.Object({ field: Type.String(), reason: Type.String() });

/**
 * The spec's error body (`#/components/schemas/ErrorResponse`). Not named `Error`: generators
 * turn a component into a type of its name, and an `Error` shadows the language's own.
 */
export const ErrorBodySchema = Type.Object(
  {
    error: Type.Object({
      code: ref(ErrorCodeSchema),
      message: Type.String({ description: "Human-readable; an unexpected server fault gets a generic one" }),
      details: Type.Optional(
        Type.Array(FieldErrorSchema, { description: "One entry per invalid field; at most 20 entries" }),
      ),
      details_truncated: Type.Optional(
        Type.Integer({ description: "How many more details there were than the 20 listed" }),
      ),
    }),
  },
  {
    $id: "ErrorResponse",
    additionalProperties: true,
    description: "The error envelope of every /api/v1 error response (the spec's standard error body)",
  },
);

/** What each documented error status means; the codes come from the one status table (errors.ts). */
const ERROR_STATUS_TEXT = {
  400: "Invalid request: body, query, path parameter, file or header (`details` names each field)",
  401: "Missing or invalid credentials",
  402: "The credit balance does not cover the request",
  403: "The credential may not do this (key scope, or another user's task or upload)",
  404: "Not found (or not yours)",
  405: "The path exists but not with this method: the Allow header lists its methods",
  409: "Conflicts with the current state",
  424: "One of the service's own dependencies (its DNS resolvers or SOCKS proxy) did not answer after its retries; nothing was charged, retry later",
  429: "Rate limited: retry after the `Retry-After` seconds",
  500: "Internal error; quote the X-Request-ID when reporting it",
  503: "The server cannot take the request now (its database does not answer, its data directory is nearly full, or it is at its limit of uploads in progress): retry after the `Retry-After` seconds",
} as const;

export type ErrorStatus = keyof typeof ERROR_STATUS_TEXT;

const codesOf = (status: number): string =>
  (Object.keys(STATUS_BY_CODE) as ErrorCode[]).filter((c) => STATUS_BY_CODE[c] === status).join(" or ");

/**
 * Response schemas for the error statuses a route documents: each the `Error` envelope. A route
 * that can fail with 500 can also meet its database down (503 with Retry-After), so 503 comes
 * with 500.
 */
export function errorResponses(...statuses: ErrorStatus[]) {
  const all = statuses.includes(500) && !statuses.includes(503) ? [...statuses, 503 as const] : statuses;
  return Object.fromEntries(
    all.map((s) => [s, ref(ErrorBodySchema, `${ERROR_STATUS_TEXT[s]} (${codesOf(s)})`)]),
  ) as Record<number, ReturnType<typeof ref<typeof ErrorBodySchema>>>;
}

export const Uuid = Type.String({ format: "uuid" });

/** Pagination offsets beyond this are refused at the edge (a 64-bit SQL offset overflows past it). */
export const MAX_OFFSET = 2_147_483_647;
export const IdParams = Type.Object({ id: Uuid });
/** The query of an operation that takes no parameters: any parameter is a 400 naming it, not ignored. */
export const NoQuery = Type.Object({}, { additionalProperties: false });
export const DateTime = Type.String({ format: "date-time" });

/**
 * A string from a closed set. Written as `type` + `enum` rather than a union of literals: the
 * serialiser writes it as a plain string (an anyOf makes fast-json-stringify match every branch).
 */
export const StringEnum = <const T extends readonly string[]>(values: T, description?: string) =>
  Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...(description ? { description } : {}) });

/**
 * A request part's object schema as the OpenAPI document states it: `schema` with the named
 * properties' schemas replaced. For rules a handler enforces itself, so that its own field-named
 * reason is the one a client gets (the tests pin them; ajv would answer first, in its words) while
 * the document still states the rule: a format, an enum, a minimum size. An override states only
 * what the handler refuses (it may refuse more than a schema can say, e.g. private webhook
 * addresses). Shown through the route's `config.swaggerTransform: documentRequest(...)`; Fastify
 * validates with `schema` alone.
 */
export function documented<T extends TObject>(
  schema: T,
  overrides: { [K in keyof T["properties"]]?: TSchema },
): TSchema {
  // Plain JSON (TypeBox's markers are not enumerable); `required` stays the validated schema's.
  return { ...schema, properties: { ...schema.properties, ...overrides } };
}

/**
 * A webhook URL as the document states it: webhooks/url-policy.ts refuses anything but an absolute
 * http(s) URL of at most 2048 characters (and, unless allowed, one naming a private address).
 */
export const WebhookUrlDocumented = (description: string) =>
  Type.String({
    format: "uri",
    pattern: "^[Hh][Tt][Tt][Pp][Ss]?://",
    maxLength: MAX_WEBHOOK_URL_LENGTH,
    description,
  });
