import { Type, type Static } from "typebox";

export const FieldErrorSchema = Type.Object({ field: Type.String(), reason: Type.String() });

/** The spec's error body. */
export const ErrorBodySchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(Type.Array(FieldErrorSchema, { description: "At most 20 entries" })),
      details_truncated: Type.Optional(
        Type.Integer({ description: "How many more details there were than the 20 listed" }),
      ),
    }),
  },
  { $id: "ErrorBody", additionalProperties: true },
);

const ref = Type.Unsafe<Static<typeof ErrorBodySchema>>(Type.Ref("ErrorBody"));

/** Response schemas for the error statuses a route documents. */
export function errorResponses(...statuses: number[]): Record<number, typeof ref> {
  return Object.fromEntries(statuses.map((s) => [s, ref]));
}

export const Uuid = Type.String({ format: "uuid" });

/** Pagination offsets beyond this are refused at the edge (a 64-bit SQL offset overflows past it). */
export const MAX_OFFSET = 2_147_483_647;
export const IdParams = Type.Object({ id: Uuid });
export const DateTime = Type.String({ format: "date-time" });
