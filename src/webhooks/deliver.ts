import { promises as dns } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent, request } from "undici";
import { blockedAddressRange } from "../net/address-policy.ts";
import { signWebhook } from "./signing.ts";
import { bareHostname, webhookUrlProblem } from "./url-policy.ts";

/** Resolves a hostname to every address it has (A and AAAA). */
export type ResolveHost = (host: string) => Promise<string[]>;

/** One POST to a receiver, already vetted: the connection may only go to `addresses`. */
export interface WebhookHttpRequest {
  url: URL;
  /** The vetted addresses of url's host; never resolved again (DNS rebinding). */
  addresses: readonly string[];
  headers: Readonly<Record<string, string>>;
  body: string;
  /** Budget for connect + request + response headers + body. */
  timeoutMs: number;
}

/** Sends a WebhookHttpRequest; resolves with the status, rejects on network errors and timeouts. */
export type WebhookHttpPost = (req: WebhookHttpRequest) => Promise<{ statusCode: number }>;

/** How one attempt ended. */
export type AttemptOutcome =
  | { kind: "delivered"; statusCode: number }
  /** Worth trying again later: a non-2xx answer, a timeout, a network or DNS error. */
  | { kind: "retry"; statusCode: number | null; error: string | null }
  /** Never worth retrying: the URL is unusable or points where we refuse to connect. */
  | { kind: "refused"; error: string };

export interface DeliveryInput {
  /** The delivery id, sent as webhook-id. */
  id: string;
  url: string;
  body: string;
  /** The "whsec_…" secret, or the secrets (current first) during a rotation's grace period. */
  secret: string | readonly string[];
  /** Signing time (webhook-timestamp). */
  at: Date;
}

export interface DeliveryDeps {
  allowPrivate: boolean;
  timeoutMs: number;
  resolve: ResolveHost;
  post: WebhookHttpPost;
}

/** Error text stored for a delivery refused by the SSRF guard. */
export const ADDRESS_NOT_ALLOWED = "address not allowed";

/** Most of a response body we read before dropping the connection; receivers' bodies are ignored. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_ERROR_LENGTH = 500;

export const systemResolve: ResolveHost = async (host) =>
  (await dns.lookup(host, { all: true })).map((a) => a.address);

class AttemptTimeoutError extends Error {
  override name = "AttemptTimeoutError";
}

/**
 * Runs one attempt: validate the URL, resolve its host, refuse it if any address is not public
 * (unless allowPrivate), sign, and POST to the vetted addresses only. Never throws: every
 * failure is an outcome. The whole attempt, DNS included, shares one `timeoutMs` budget.
 */
export async function attemptDelivery(input: DeliveryInput, deps: DeliveryDeps): Promise<AttemptOutcome> {
  // Structural checks only: private literals are judged below with the resolved addresses.
  const problem = webhookUrlProblem(input.url, true);
  if (problem !== null) return { kind: "refused", error: `invalid URL: ${problem}` };
  const url = new URL(input.url);
  const host = bareHostname(url);
  const startedAt = performance.now();

  let addresses: string[];
  try {
    addresses =
      isIP(host) !== 0
        ? [host]
        : await withDeadline(deps.resolve(host), deps.timeoutMs, "DNS lookup timed out");
  } catch (error) {
    return { kind: "retry", statusCode: null, error: `DNS: ${describeError(error)}` };
  }
  if (addresses.length === 0)
    return { kind: "retry", statusCode: null, error: `DNS: no address for ${host}` };
  // ANY non-public address refuses the URL: a mixed answer is how rebinding attacks start.
  if (!deps.allowPrivate && addresses.some((a) => blockedAddressRange(a) !== null)) {
    return { kind: "refused", error: ADDRESS_NOT_ALLOWED };
  }

  const headers = signWebhook(input.secret, input.id, input.at, input.body);
  const remainingMs = Math.max(1, Math.ceil(deps.timeoutMs - (performance.now() - startedAt)));
  try {
    const { statusCode } = await deps.post({
      url,
      addresses,
      headers: { ...headers },
      body: input.body,
      timeoutMs: remainingMs,
    });
    if (statusCode >= 200 && statusCode < 300) return { kind: "delivered", statusCode };
    // Redirects are not followed: a receiver could bounce us to an internal address after the check.
    const error = statusCode >= 300 && statusCode < 400 ? "redirect not followed" : null;
    return { kind: "retry", statusCode, error };
  } catch (error) {
    return { kind: "retry", statusCode: null, error: describeError(error) };
  }
}

/**
 * The production WebhookHttpPost: undici `request` through a one-shot Agent whose socket lookup
 * returns only the vetted addresses, so the connection cannot go anywhere DNS says *now*; the URL
 * keeps its hostname, so the Host header and the TLS servername (SNI, certificate check) are the
 * receiver's. undici 7's `request` follows no redirects. The Agent is destroyed afterwards: no
 * pooled socket outlives the attempt or keeps the process alive.
 */
export const postWithUndici: WebhookHttpPost = async (req) => {
  const timeoutMs = Math.max(1, Math.ceil(req.timeoutMs)); // undici wants integers
  const agent = new Agent({
    connect: { lookup: pinnedLookup(req.addresses), timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connections: 1,
  });
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new AttemptTimeoutError(`timed out after ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    const res = await request(req.url, {
      method: "POST",
      headers: req.headers,
      body: req.body,
      dispatcher: agent,
      signal: deadline.signal,
    });
    // The body is read (bounded) only so the exchange completes within the deadline.
    await res.body.dump({ limit: MAX_RESPONSE_BYTES, signal: deadline.signal });
    return { statusCode: res.statusCode };
  } catch (error) {
    if (deadline.signal.aborted) throw deadline.signal.reason as Error;
    throw error;
  } finally {
    clearTimeout(timer);
    await agent.destroy().catch(() => {});
  }
};

/**
 * A `net.connect` lookup that answers from a fixed list. With `all` (Node 20's happy-eyeballs
 * connect asks for it) every vetted address is offered; otherwise the first of the wanted family.
 */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: isIP(address) }));
  return (hostname, options, callback) => {
    const wanted =
      options.family === 4 || options.family === 6
        ? entries.filter((e) => e.family === options.family)
        : entries;
    const first = wanted[0];
    if (!first) {
      const error: NodeJS.ErrnoException = new Error(`no vetted address for ${hostname}`);
      error.code = "ENOTFOUND";
      callback(error, "", 0);
    } else if (options.all) {
      callback(null, wanted);
    } else {
      callback(null, first.address, first.family);
    }
  };
}

async function withDeadline<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AttemptTimeoutError(message)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A short, stable description for webhook_attempts.error: the machine code when there is one. */
export function describeError(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    text = code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
    if (!text) text = error.name;
  } else {
    text = String(error);
  }
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}
