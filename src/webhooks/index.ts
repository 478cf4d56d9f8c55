// Completion webhooks: the outbox (enqueue inside the caller's transaction), the dispatcher
// (claim → sign → deliver → record), and the URL/address policy that keeps deliveries off
// internal networks.
export { blockedAddressRange, isPublicAddress } from "./address-policy.ts";
export { WEBHOOK_RETRY_DELAYS_MS, webhookRetryDelayMs } from "./backoff.ts";
export {
  ADDRESS_NOT_ALLOWED,
  attemptDelivery,
  postWithUndici,
  type AttemptOutcome,
  type ResolveHost,
  type WebhookHttpPost,
  type WebhookHttpRequest,
} from "./deliver.ts";
export {
  createWebhookDispatcher,
  noopWebhookMetrics,
  type WebhookDispatcher,
  type WebhookDispatcherDeps,
  type WebhookMetrics,
} from "./dispatcher.ts";
export { enqueueTaskCompleted, type TaskCompletedEvent } from "./outbox.ts";
export { serializeWebhookPayload, taskCompletedPayload, type TaskCompletedPayload } from "./payload.ts";
export { webhookSecretOf } from "./secret.ts";
export { signWebhook, WEBHOOK_USER_AGENT } from "./signing.ts";
export { MAX_WEBHOOK_URL_LENGTH, webhookUrlProblem } from "./url-policy.ts";
