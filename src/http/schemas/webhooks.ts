import { Type } from "typebox";

/** The caller's Standard Webhooks signing secret. */
export const WebhookSecretReply = Type.Object({
  secret: Type.String({
    pattern: "^whsec_",
    description: "Standard Webhooks secret for verifying deliveries",
  }),
});
