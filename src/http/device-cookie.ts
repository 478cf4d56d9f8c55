// The remembered device's cookie (auth/remembered-devices.ts; docs/dashboard-session.md). Its
// attributes are the defence, so they are fixed here and nowhere else:
// - HttpOnly: a script in the page (XSS) cannot read it, only make the dashboard's own requests;
// - SameSite=Strict: no other site's page or link sends it;
// - Path=/api/v1/auth/device: sent only to the route that exchanges it, never with the API's
//   other requests, so it cannot stand in for a session anywhere else;
// - Secure whenever the request arrived over https (req.protocol: X-Forwarded-Proto is believed
//   from TRUST_PROXY's proxies only), so it never travels in clear once it was set over TLS;
// - Max-Age: the device's remaining life; the browser drops it when the server would refuse it.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { DeviceCredential } from "../auth/remembered-devices.ts";
import type { HttpDeps } from "./deps.ts";

const DEVICE_COOKIE = "mailprobe_device";
export const DEVICE_PATH = "/api/v1/auth/device";

/** The device cookie's value from a Cookie header; null when absent (or sent twice: ambiguous). */
export function readDeviceCookie(req: FastifyRequest): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  const values = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`${DEVICE_COOKIE}=`))
    .map((part) => part.slice(DEVICE_COOKIE.length + 1));
  return values.length === 1 ? values[0]! : null;
}

function cookieHeader(req: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = req.protocol === "https" ? "; Secure" : "";
  return `${DEVICE_COOKIE}=${value}; Max-Age=${String(maxAgeSeconds)}; Path=${DEVICE_PATH}; HttpOnly; SameSite=Strict${secure}`;
}

/** Hands the browser the device's (new) credential, good until the device expires. */
export function setDeviceCookie(
  req: FastifyRequest,
  reply: FastifyReply,
  c: DeviceCredential,
  now: Date,
): void {
  const seconds = Math.max(0, Math.floor((c.expiresAt.getTime() - now.getTime()) / 1000));
  void reply.header("set-cookie", cookieHeader(req, c.value, seconds));
}

/** Tells the browser to drop the cookie (forgotten, refused or revoked). */
export function clearDeviceCookie(req: FastifyRequest, reply: FastifyReply): void {
  void reply.header("set-cookie", cookieHeader(req, "", 0));
}

/** Remembers the browser that just signed in with `apiKeyId` and sets its cookie; answers its expiry. */
export async function rememberDevice(
  deps: Pick<HttpDeps, "devices" | "clock">,
  req: FastifyRequest,
  reply: FastifyReply,
  userId: string,
  apiKeyId: string,
): Promise<Date> {
  const credential = await deps.devices.remember(userId, apiKeyId, req.headers["user-agent"]);
  setDeviceCookie(req, reply, credential, deps.clock.now());
  return credential.expiresAt;
}
