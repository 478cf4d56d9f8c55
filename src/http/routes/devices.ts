// Remembered devices (auth/remembered-devices.ts, docs/dashboard-session.md#remembered-devices):
// the cookie's own route, where it is exchanged for a session or forgotten, and the key's list.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { requireKeyManagement } from "../../auth/principal.ts";
import type { DeviceRefusal } from "../../auth/remembered-devices.ts";
import { AppError, conflict } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { clearDeviceCookie, DEVICE_PATH, readDeviceCookie, setDeviceCookie } from "../device-cookie.ts";
import { assertAddressAdmitted, principalOf, spendRefusedCredential } from "../plugins/auth.ts";
import {
  DeviceParams,
  DeviceSessionBody,
  RememberedDeviceList,
  SessionReply,
  toRememberedDevice,
  toSessionReply,
} from "../schemas/auth.ts";
import { errorResponses, IdParams, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";

const refusal = (reason: DeviceRefusal | "missing"): AppError => {
  switch (reason) {
    case "missing":
      return new AppError("UNAUTHORIZED", "This browser is not remembered: sign in with your API key");
    case "invalid":
      return new AppError(
        "UNAUTHORIZED",
        "This browser is no longer remembered (expired, revoked, or its API key was revoked): sign in with your API key",
      );
    case "reused":
      return new AppError(
        "UNAUTHORIZED",
        "This browser's remembered sign-in was used from a copy of it, so it was revoked: sign in with your API key",
      );
    case "raced":
      return conflict(
        "Another tab of this browser used its remembered sign-in at the same moment: try again",
      );
  }
};

/**
 * Outside the authenticated scope: the cookie is the credential. A refused cookie spends the
 * client address's allowance, as a failed sign-in does; a request without one spends nothing
 * (the dashboard asks on every load, not knowing whether the HttpOnly cookie is there).
 */
export const deviceSessionRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    DEVICE_PATH,
    {
      schema: {
        operationId: "openDeviceSession",
        summary: "Sign in as a remembered device",
        description:
          "Exchanges the remembered device's cookie (set at sign-in with `remember_device: true`; HttpOnly, SameSite=Strict, sent only to this path) for a session of the key that signed in, and replaces the cookie (each value works once). 401 without a cookie, or when the device expired, was revoked, its key was revoked or its user deactivated; a value already replaced is taken for a stolen copy: the device is revoked and its sessions end (401). 409 when another tab of the browser used the same value within 30 s: try again. The session is not a fresh sign-in: revealing or creating keys from it needs the key. Takes an empty JSON object.",
        tags: [TAG.auth],
        security: [],
        body: DeviceSessionBody,
        response: {
          200: ref(SessionReply, "The session token; the cookie is replaced"),
          ...errorResponses(400, 401, 409, 429, 500),
        },
      },
      config: { writesNothing: true },
    },
    async (req, reply) => {
      const value = readDeviceCookie(req);
      if (value === null) throw refusal("missing");
      await assertAddressAdmitted(deps.rateLimiter, req.ip);
      const opened = await deps.devices.openSession(value);
      if (opened.ok) {
        setDeviceCookie(req, reply, opened.credential, deps.clock.now());
        return toSessionReply(opened.session, opened.userId, opened.credential.expiresAt);
      }
      if (opened.reason === "raced") throw refusal("raced");
      clearDeviceCookie(req, reply);
      await spendRefusedCredential(deps.rateLimiter, req.ip);
      throw refusal(opened.reason);
    },
  );

  app.delete(
    DEVICE_PATH,
    {
      schema: {
        operationId: "forgetDevice",
        summary: "Forget this device",
        description:
          "Revokes the remembered device whose cookie the request carries (its sessions end) and clears the cookie; 204 also when there is none. The dashboard's Sign out calls it.",
        tags: [TAG.auth],
        security: [],
        response: { 204: Type.Null({ description: "Forgotten" }), ...errorResponses(429, 500) },
      },
      config: { writesNothing: true },
    },
    async (req, reply) => {
      const value = readDeviceCookie(req);
      if (value !== null) await deps.devices.forget(value);
      clearDeviceCookie(req, reply);
      return reply.status(204).send(null);
    },
  );
};

/** Inside the authenticated scope: a key's devices, for `custom` keys and sessions (DESIGN §5). */
export const deviceRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  // As for the keys themselves: an integration key gets 403 before anything else is looked at.
  app.addHook("onRequest", async (req) => requireKeyManagement(principalOf(req)));

  app.get(
    "/api/v1/api-keys/:id/devices",
    {
      schema: {
        operationId: "listKeyDevices",
        summary: "List a key's remembered devices",
        description:
          "The browsers remembered at a sign-in with this key that can still open sessions, most recently used first; none once the key is revoked. Needs a `custom` key or a session (integration keys: 403); 404 for a key that is not the caller's.",
        tags: [TAG.apiKeys],
        params: IdParams,
        response: {
          200: ref(RememberedDeviceList, "The devices"),
          ...errorResponses(400, 401, 403, 404, 429, 500),
        },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const devices = await deps.devices.list(p.userId, req.params.id);
      return { devices: devices.map((d) => toRememberedDevice(d, p.session?.deviceId ?? null)) };
    },
  );

  app.delete(
    "/api/v1/api-keys/:id/devices/:device_id",
    {
      schema: {
        operationId: "revokeKeyDevice",
        summary: "Revoke a remembered device",
        description:
          "The device's cookie stops working and the sessions it opened end at once (idempotent). Needs a `custom` key or a session (integration keys: 403); 404 when the device is not one of this key's.",
        tags: [TAG.apiKeys],
        params: DeviceParams,
        response: {
          204: Type.Null({ description: "Revoked" }),
          ...errorResponses(400, 401, 403, 404, 429, 500),
        },
      },
    },
    async (req, reply) => {
      await deps.devices.revoke(principalOf(req).userId, req.params.id, req.params.device_id);
      return reply.status(204).send(null);
    },
  );
};
