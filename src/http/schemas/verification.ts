import { Type } from "typebox";
import type { VerificationRecord } from "../../db/queries/verifications.ts";
import { resultJson } from "../../verifications/record-of-result.ts";
import { DateTime, Uuid } from "./common.ts";

export const VerifyBody = Type.Object({
  email: Type.String({ maxLength: 320, description: "Address to verify (at most 320 characters)" }),
});

/** The spec's "Email verification result". */
export const VerificationReply = Type.Object({
  id: Uuid,
  email: Type.String(),
  status: Type.Union([
    Type.Literal("valid"),
    Type.Literal("invalid"),
    Type.Literal("catchall"),
    Type.Literal("invalid_syntax"),
    Type.Literal("disposable_domain"),
    Type.Literal("unknown"),
  ]),
  is_role_based: Type.Boolean(),
  is_disposable: Type.Boolean(),
  has_mx_records: Type.Boolean(),
  has_reverse_dns: Type.Boolean(),
  domain_name: Type.String(),
  host_name: Type.String(),
  server_type: Type.String(),
  is_catchall: Type.Boolean(),
  validated_at: DateTime,
  unknown_reason: Type.Union([Type.String(), Type.Null()]),
  needs_physical_verify: Type.Boolean(),
});

export const toVerificationReply = (r: VerificationRecord) => ({ ...resultJson(r), id: r.id });

/** 408: the error body plus the partial result (DESIGN.md §5). */
export const TimeoutReply = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String() }),
  result: VerificationReply,
});
