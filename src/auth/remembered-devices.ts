// Remembered devices (docs/dashboard-session.md, docs/session-threat-model.md):
// a browser whose user ticked "Remember this device" at sign-in gets back in without the API key
// for DEVICE_REMEMBER_DAYS. Its credential is an HttpOnly cookie `<series>.<secret>` (the route
// sets it); the server keeps the series and the secret's SHA-256 only. Every use replaces the
// secret (refresh-token rotation). Presenting a known series with a secret it no longer holds is
// a copy of the cookie being used after the original moved on (the "improved persistent login
// cookie" of Barry Jaspan, 2006): the device is revoked and its sessions end, whoever held which
// copy. The one exception is the secret just replaced, within ROTATION_GRACE_MS: two tabs of
// one browser racing is not theft. A device is tied to its user and to the key that signed in:
// revoking the key refuses it; a session it opens is a session of that key that names the device
// (and so is never a fresh sign-in for revealing or creating keys, principal.ts).
import type { Database, Queryable } from "../db/client.ts";
import { findApiKeyById } from "../db/queries/api-keys.ts";
import {
  deleteExpiredDevices,
  evictDevicesBeyond,
  findDeviceBySeries,
  insertRememberedDevice,
  listLiveDevicesOfKey,
  revokeDevice,
  rotateDeviceToken,
  type DeviceRevocation,
  type RememberedDeviceRow,
} from "../db/queries/remembered-devices.ts";
import { endSessionsOfDevice } from "../db/queries/sessions.ts";
import { AppError, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { randomToken, safeEqual, sha256Hex } from "../lib/tokens.ts";
import { deviceLabel } from "./device-label.ts";
import type { IssuedSession } from "./jwt.ts";
import { ROTATION_GRACE_MS, type SessionService } from "./sessions.ts";

/**
 * Live devices one key may have. Remembering one more revokes the least recently used (a
 * browser long unused is the one its owner is least likely to miss; refusing instead would
 * lock a user who wiped browsers out of the checkbox until they revoke by hand).
 */
export const MAX_DEVICES_PER_KEY = 20;
const SERIES_LENGTH = 24;
const SECRET_LENGTH = 40;

/** The cookie's value and when it stops working (the device's expiry, kept through rotations). */
export interface DeviceCredential {
  value: string;
  expiresAt: Date;
}

/** Why a cookie opened nothing: `reused` revoked its device; `raced` lost to another tab. */
export type DeviceRefusal = "invalid" | "reused" | "raced";

export type DeviceOpening =
  | { ok: true; userId: string; session: IssuedSession; credential: DeviceCredential }
  | { ok: false; reason: DeviceRefusal };

/** A device as listed with its key. */
export interface DeviceListing {
  id: string;
  label: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date;
}

export interface RememberedDeviceService {
  /** DEVICE_REMEMBER_DAYS in ms: a device's whole life, from the sign-in that remembered it. */
  readonly lifetimeMs: number;
  /** Remembers the browser that just signed in with `apiKeyId` (evicting beyond the cap). */
  remember(userId: string, apiKeyId: string, userAgent: string | undefined): Promise<DeviceCredential>;
  /** Opens a session from a cookie's value and rotates it. */
  openSession(value: string): Promise<DeviceOpening>;
  /** "Forget this device": revokes the device of a cookie still its own; nothing otherwise. */
  forget(value: string): Promise<void>;
  /** The key's devices that may still open a session; 404 for a key not the user's. */
  list(userId: string, apiKeyId: string): Promise<DeviceListing[]>;
  /** Revokes one of the key's devices and ends its sessions; 404 when it is not that key's. */
  revoke(userId: string, apiKeyId: string, deviceId: string): Promise<void>;
}

/** The parts of a cookie's value; null for anything we never issued. */
function parseDeviceValue(value: string): { series: string; secret: string } | null {
  const m = /^([0-9A-Za-z]+)\.([0-9A-Za-z]+)$/.exec(value);
  if (!m || m[1]!.length !== SERIES_LENGTH || m[2]!.length !== SECRET_LENGTH) return null;
  return { series: m[1]!, secret: m[2]! };
}

/** Is `hash` the secret the device held just before its last rotation, replaced under the grace? */
const isJustReplaced = (d: RememberedDeviceRow, hash: string, now: Date): boolean =>
  d.previousTokenHash !== null &&
  safeEqual(d.previousTokenHash, hash) &&
  d.rotatedAt !== null &&
  now.getTime() - d.rotatedAt.getTime() < ROTATION_GRACE_MS;

const toListing = (d: RememberedDeviceRow): DeviceListing => ({
  id: d.id,
  label: d.userAgent,
  createdAt: d.createdAt,
  lastUsedAt: d.lastUsedAt,
  expiresAt: d.expiresAt,
});

export function createRememberedDeviceService(
  db: Database,
  sessions: Pick<SessionService, "open">,
  clock: Clock,
  lifetimeMs: number,
): RememberedDeviceService {
  async function end(q: Queryable, d: RememberedDeviceRow, reason: DeviceRevocation, at: Date) {
    await revokeDevice(q, { id: d.id, userId: d.userId, apiKeyId: d.apiKeyId, reason, at });
    await endSessionsOfDevice(q, d.id, at);
  }

  async function requireOwnKey(userId: string, apiKeyId: string): Promise<void> {
    const key = await findApiKeyById(db, apiKeyId);
    if (!key || key.userId !== userId) throw notFound("API key");
  }

  return {
    lifetimeMs,

    async remember(userId, apiKeyId, userAgent) {
      const at = clock.now();
      const series = randomToken(SERIES_LENGTH);
      const secret = randomToken(SECRET_LENGTH);
      const expiresAt = new Date(at.getTime() + lifetimeMs);
      await db.transaction(async (tx) => {
        await deleteExpiredDevices(tx, userId, at);
        const device = { id: newId(), userId, apiKeyId, series, tokenHash: sha256Hex(secret) };
        await insertRememberedDevice(tx, { ...device, userAgent: deviceLabel(userAgent), at, expiresAt });
        await evictDevicesBeyond(tx, apiKeyId, MAX_DEVICES_PER_KEY, at);
      });
      return { value: `${series}.${secret}`, expiresAt };
    },

    async openSession(value) {
      const parts = parseDeviceValue(value);
      if (!parts) return { ok: false, reason: "invalid" };
      const hash = sha256Hex(parts.secret);
      const now = clock.now();
      return db.transaction(async (tx): Promise<DeviceOpening> => {
        const device = await findDeviceBySeries(tx, parts.series);
        if (!device) return { ok: false, reason: "invalid" };
        if (!safeEqual(device.tokenHash, hash)) {
          if (isJustReplaced(device, hash, now)) return { ok: false, reason: "raced" };
          if (device.revokedAt === null) await end(tx, device, "reused", now);
          return { ok: false, reason: "reused" };
        }
        const secret = randomToken(SECRET_LENGTH);
        const rotation = { id: device.id, tokenHash: hash, nextHash: sha256Hex(secret), at: now };
        if (!(await rotateDeviceToken(tx, rotation))) return { ok: false, reason: "invalid" };
        const session = await sessions.open(device.userId, device.apiKeyId, tx, device.id);
        if (!session)
          throw new AppError("INTERNAL_ERROR", "Sessions are not configured on this server (JWT_SECRET)");
        const credential = { value: `${parts.series}.${secret}`, expiresAt: device.expiresAt };
        return { ok: true, userId: device.userId, session, credential };
      });
    },

    async forget(value) {
      const parts = parseDeviceValue(value);
      if (!parts) return;
      const hash = sha256Hex(parts.secret);
      const now = clock.now();
      await db.transaction(async (tx) => {
        const device = await findDeviceBySeries(tx, parts.series);
        // Only the cookie's holder forgets it: a guessed series with any secret changes nothing.
        if (device && (safeEqual(device.tokenHash, hash) || isJustReplaced(device, hash, now)))
          await end(tx, device, "forgotten", now);
      });
    },

    async list(userId, apiKeyId) {
      await requireOwnKey(userId, apiKeyId);
      return (await listLiveDevicesOfKey(db, userId, apiKeyId, clock.now())).map(toListing);
    },

    async revoke(userId, apiKeyId, deviceId) {
      const at = clock.now();
      await db.transaction(async (tx) => {
        if (!(await revokeDevice(tx, { id: deviceId, userId, apiKeyId, reason: "revoked", at })))
          throw notFound("Remembered device");
        await endSessionsOfDevice(tx, deviceId, at);
      });
    },
  };
}
