// Dashboard sessions, held on the server (migration 0023). A session token is a short-lived
// HS256 JWT (jwt.ts) naming its session row and its generation. Each request checks the row: the
// session has not ended (signed out) and the token is of its current generation, or of the one
// before within ROTATION_GRACE_MS of a renewal (the other tabs of the dashboard adopt the renewed
// token through a broadcast; a request they sent meanwhile must not end the session). A renewal
// moves the generation on, so the token it replaces stops working; signing out ends every token
// of the session on every node. The key that opened the session is checked too (authenticate.ts).
import type { Database, Queryable } from "../db/client.ts";
import {
  endSession,
  findSession,
  insertSession,
  rotateSession,
  type SessionRow,
} from "../db/queries/sessions.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import type { IssuedSession, JwtService, VerifiedJwt } from "./jwt.ts";
import type { Principal } from "./principal.ts";

/** How long the token a renewal replaced still works: for the dashboard's other tabs. */
export const ROTATION_GRACE_MS = 30_000;

/** Why a caller's session was not renewed (each maps to one HTTP answer in the route). */
export type RenewalRefusal = "not_a_session" | "limit_reached" | "not_configured" | "ended";

export type SessionRenewal = { ok: true; session: IssuedSession } | { ok: false; reason: RenewalRefusal };

export interface SessionService {
  /**
   * A new session opened by an API key (or by a sign-in link or a remembered device tied to one,
   * inside the transaction that used it: `q`; `deviceId` names the device); null when no
   * JWT_SECRET is available.
   */
  open(userId: string, apiKeyId: string, q?: Queryable, deviceId?: string): Promise<IssuedSession | null>;
  /** A fresh token for a live session; the caller's token stops working after the grace. */
  renew(p: Principal): Promise<SessionRenewal>;
  /** Ends the caller's session: every token of it is refused from now on. */
  signOut(p: Principal): Promise<void>;
  /** Whether a verified session token belongs to a live session at its current generation (or within the grace). */
  isLive(v: VerifiedJwt): Promise<boolean>;
}

/** Is a token of `generation` still good for this session row at `now`? */
function acceptsGeneration(row: SessionRow, generation: number, now: Date): boolean {
  if (row.endedAt !== null) return false;
  if (generation === row.generation) return true;
  return (
    generation === row.generation - 1 &&
    row.rotatedAt !== null &&
    now.getTime() - row.rotatedAt.getTime() < ROTATION_GRACE_MS
  );
}

export function createSessionService(db: Database, jwt: JwtService, clock: Clock): SessionService {
  return {
    async open(userId, apiKeyId, q = db, deviceId) {
      const now = clock.now();
      const id = newId();
      const issued = await jwt.issue(
        userId,
        apiKeyId,
        { id, generation: 0, deviceId: deviceId ?? null },
        now,
      );
      if (!issued) return null;
      await insertSession(q, { id, userId, apiKeyId, at: now, deviceId: deviceId ?? null });
      return issued;
    },

    async renew(p) {
      if (p.source !== "frontend" || !p.sessionKeyId || !p.sessionSignedInAt || !p.session)
        return { ok: false, reason: "not_a_session" };
      const now = clock.now();
      // Tokens never outlive the cap, so this is reached only across clocks; it keeps the rule whole.
      if (now.getTime() >= jwt.renewableUntil(p.sessionSignedInAt).getTime())
        return { ok: false, reason: "limit_reached" };
      const rotated = await rotateSession(db, p.session.id, p.session.generation, now);
      // Not at the caller's generation: another tab renewed first (the caller holds the token
      // before, within the grace, or it would not have authenticated): it gets the current one.
      let generation = rotated;
      if (generation === null) {
        const current = await findSession(db, p.session.id);
        if (current === null || current.endedAt !== null) return { ok: false, reason: "ended" };
        generation = current.generation;
      }
      const session = await jwt.issue(
        p.userId,
        p.sessionKeyId,
        { id: p.session.id, generation, deviceId: p.session.deviceId ?? null },
        now,
        p.sessionSignedInAt,
      );
      return session ? { ok: true, session } : { ok: false, reason: "not_configured" };
    },

    async signOut(p) {
      if (p.session) await endSession(db, p.session.id, p.userId, clock.now());
    },

    async isLive(v) {
      if (!v.session) return true;
      const row = await findSession(db, v.session.id);
      return (
        row !== null &&
        row.userId === v.userId &&
        row.apiKeyId === v.apiKeyId &&
        acceptsGeneration(row, v.session.generation, clock.now())
      );
    },
  };
}
