// The dashboard's session: a JWT from POST /api/v1/auth/session, kept in sessionStorage (gone
// when the browser closes) with its expiry, renewed through POST /api/v1/auth/session/refresh
// while the user is present (interacting, or watching a visible page that polls), and handed to the other tabs of this browser over a BroadcastChannel
// (docs/dashboard-session.md says why not localStorage). The API key typed to sign in is never
// stored. A tab without a session that no other tab answers asks the remembered device
// (remembered-device.ts) before it shows the sign-in form.
import { useEffect, useState } from "preact/hooks";
import { forgetDevice, sessionFromDevice } from "./remembered-device.ts";
import {
  isRenewable,
  lastPresence,
  renewalOpensAt,
  shouldRenew,
  type TokenTimes,
} from "./lib/session-plan.ts";

export interface Session {
  token: string;
  /** ISO 8601 expiry from the server. */
  expiresAt: string;
  userId: string;
  /** The key that opened the session (JWT claim api_key_id), to mark it in the keys list. */
  apiKeyId: string | null;
  /** Sign-in + SESSION_MAX_HOURS (ISO); absent for a session stored before renewals existed. */
  renewableUntil?: string | null;
}

/** The server's session reply (POST /api/v1/auth/session and /api/v1/auth/session/refresh). */
export interface SessionGrant {
  token: string;
  expires_at: string;
  user_id: string;
  renewable_until?: string;
}

/** `limit`: the session reached SESSION_MAX_HOURS and could not be renewed any more. */
export type SignedOutReason = "signed_out" | "expired" | "limit" | null;

interface State {
  session: Session | null;
  reason: SignedOutReason;
  /**
   * A tab opened without a session, asking the others for theirs, then the remembered device,
   * before showing the form.
   */
  joining: boolean;
}

type Message =
  | { type: "ask" }
  | { type: "session"; session: Session }
  | { type: "ended"; userId: string; token: string; reason: Exclude<SignedOutReason, null> };

const STORAGE_KEY = "mailprobe.session";
/** How long a new tab waits for another tab's answer (a same-browser round trip takes a few ms). */
const JOIN_WAIT_MS = 250;
/** After a renewal that failed on the way (offline, 5xx), the next attempt waits this long. */
const RETRY_AFTER_MS = 10_000;
const ACTIVITY_EVENTS = ["pointerdown", "keydown", "wheel", "touchstart"] as const;

const listeners = new Set<() => void>();
const channel: BroadcastChannel | null =
  typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel("mailprobe.session");
let expiryTimer: number | undefined;
let renewalTimer: number | undefined;
let lastActivityMs: number | null = null;
/** The last poll of a visible page (noteWatching): presence without interaction. */
let lastWatchedMs: number | null = null;
let renewing = false;
let retryNotBeforeMs = 0;
/** A token the server would not renew (403): not asked again. */
let refusedToken: string | null = null;
let state: State = load();

/**
 * The stored session of this tab. One that expired while the tab was closed or asleep is
 * dropped from storage at once and reported as expired, so the sign-in form says why.
 */
function load(): State {
  try {
    const raw = window.sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return { session: null, reason: null, joining: true };
    const s = JSON.parse(raw) as Session;
    if (typeof s.token === "string" && Date.parse(s.expiresAt) > Date.now())
      return { session: s, reason: null, joining: false };
    window.sessionStorage.removeItem(STORAGE_KEY);
    return { session: null, reason: "expired", joining: true };
  } catch {
    return { session: null, reason: null, joining: true };
  }
}

function set(next: State): void {
  const changed = next.session !== state.session;
  state = next;
  try {
    // Only a change of session is written: the end of a wait for other tabs must not clear what
    // this tab's storage holds.
    if (changed && next.session) window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next.session));
    else if (changed) window.sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage refused (private mode quotas): the session still lives in memory.
  }
  scheduleTimers();
  for (const l of listeners) l();
}

const post = (m: Message): void => channel?.postMessage(m);

/** The claims the dashboard plans with (read, not verified: the server verifies). */
function claimsOf(token: string): { apiKeyId: string | null; issuedAtMs: number | null } {
  try {
    const payload = token.split(".")[1] ?? "";
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    const claims = JSON.parse(json) as { api_key_id?: unknown; iat?: unknown };
    return {
      apiKeyId: typeof claims.api_key_id === "string" ? claims.api_key_id : null,
      issuedAtMs: typeof claims.iat === "number" ? claims.iat * 1000 : null,
    };
  } catch {
    return { apiKeyId: null, issuedAtMs: null };
  }
}

function timesOf(s: Session): TokenTimes {
  const expiresAtMs = Date.parse(s.expiresAt);
  return {
    // Without `iat` the window never opens: the token simply lives to its expiry.
    issuedAtMs: claimsOf(s.token).issuedAtMs ?? expiresAtMs,
    expiresAtMs,
    renewableUntilMs: s.renewableUntil ? Date.parse(s.renewableUntil) : null,
  };
}

/** Timers beyond 2^31 ms fire at once; sessions last minutes to hours, so cap defensively. */
const delayUntil = (ms: number): number => Math.max(0, Math.min(ms - Date.now(), 2 ** 31 - 1));

function scheduleTimers(): void {
  window.clearTimeout(expiryTimer);
  window.clearTimeout(renewalTimer);
  const s = state.session;
  if (!s) return;
  const times = timesOf(s);
  expiryTimer = window.setTimeout(expireSession, delayUntil(times.expiresAtMs));
  // At the window's opening a tab where the user was present renews; otherwise it waits for the next
  // interaction or visible poll.
  if (isRenewable(times)) renewalTimer = window.setTimeout(maybeRenew, delayUntil(renewalOpensAt(times)));
}

const sessionOf = (g: SessionGrant): Session => ({
  token: g.token,
  expiresAt: g.expires_at,
  userId: g.user_id,
  apiKeyId: claimsOf(g.token).apiKeyId,
  renewableUntil: g.renewable_until ?? null,
});

/** Takes another tab's (or a renewal's) token when it extends this tab's session of the same user. */
function adopt(next: Session, allowNew: boolean): void {
  const current = state.session;
  const isLonger =
    current !== null &&
    current.userId === next.userId &&
    Date.parse(next.expiresAt) > Date.parse(current.expiresAt);
  if ((current === null && allowNew) || isLonger) set({ session: next, reason: null, joining: false });
}

function maybeRenew(): void {
  const s = state.session;
  if (!s || renewing || s.token === refusedToken || Date.now() < retryNotBeforeMs) return;
  if (shouldRenew(timesOf(s), lastPresence(lastActivityMs, lastWatchedMs), Date.now())) void renew(s);
}

/**
 * A page polled while visible (hooks.ts useInterval): someone is watching it change, so the
 * session is renewed as for an interaction. A hidden tab does not poll and so lets its session
 * lapse; SESSION_MAX_HOURS still ends it (docs/dashboard-session.md, "Renewal").
 */
export function noteWatching(): void {
  if (document.visibilityState !== "visible") return;
  lastWatchedMs = Date.now();
  maybeRenew();
}

async function renew(s: Session): Promise<void> {
  renewing = true;
  try {
    const res = await fetch("/api/v1/auth/session/refresh", {
      method: "POST",
      headers: { authorization: `Bearer ${s.token}` },
    });
    if (res.ok) {
      const next = sessionOf((await res.json()) as SessionGrant);
      adopt(next, false);
      if (state.session?.token === next.token) post({ type: "session", session: next });
    } else if (res.status === 401) {
      // Expired, its key revoked, or the cap reached: the same answer every request would get.
      if (state.session?.token === s.token) expireSession();
    } else if (res.status === 403) {
      refusedToken = s.token;
    } else {
      retryNotBeforeMs = Date.now() + RETRY_AFTER_MS;
    }
  } catch {
    // Offline or the server restarting: the token lives on; a later activity tries again.
    retryNotBeforeMs = Date.now() + RETRY_AFTER_MS;
  } finally {
    renewing = false;
  }
}

export const currentSession = (): Session | null => state.session;

export function startSession(grant: SessionGrant): void {
  const session = sessionOf(grant);
  set({ session, reason: null, joining: false });
  post({ type: "session", session });
}

/**
 * Signs out of the session everywhere: the server ends it (every token of it answers 401 on
 * every node, DELETE /api/v1/auth/session) and the tabs sharing it show the sign-in form too. A
 * remembered device is forgotten: signing out means this browser should not get back in alone.
 */
export function signOut(): void {
  forgetDevice();
  const s = state.session;
  if (s) {
    // Best effort: offline, the token still expires within SESSION_TTL_SECONDS.
    void fetch("/api/v1/auth/session", {
      method: "DELETE",
      headers: { authorization: `Bearer ${s.token}` },
    }).catch(() => {});
    post({ type: "ended", userId: s.userId, token: s.token, reason: "signed_out" });
  }
  set({ session: null, reason: "signed_out", joining: false });
}

/** Drops the token after a 401 or at its expiry; the sign-in form says why. */
export function expireSession(): void {
  const s = state.session;
  if (!s) return;
  const times = timesOf(s);
  // A session that ran to its cap ended for good; say so rather than "expired".
  const atCap = times.renewableUntilMs !== null && times.expiresAtMs >= times.renewableUntilMs;
  const reason = atCap && Date.now() >= times.expiresAtMs - 5_000 ? "limit" : "expired";
  post({ type: "ended", userId: s.userId, token: s.token, reason });
  set({ session: null, reason, joining: false });
}

export function useSession(): State {
  const [, force] = useState(0);
  const rendered = state;
  useEffect(() => {
    const l = (): void => force((n) => n + 1);
    listeners.add(l);
    // Another tab's answer can arrive between this render and the effect (effects run after paint).
    if (state !== rendered) l();
    return () => listeners.delete(l);
  }, []);
  return state;
}

/** Calls `listener` after every change of the session (sign-in, renewal, sign-out, expiry). */
export function onSessionChange(listener: (s: { session: Session | null; reason: SignedOutReason }) => void) {
  const l = (): void => listener(state);
  listeners.add(l);
  return (): void => void listeners.delete(l);
}

channel?.addEventListener("message", (e: MessageEvent<Message>) => {
  const m = e.data;
  const s = state.session;
  switch (m.type) {
    case "ask":
      if (s && Date.parse(s.expiresAt) > Date.now()) post({ type: "session", session: s });
      return;
    case "session":
      adopt(m.session, true);
      return;
    case "ended":
      // A sign-out ends the user's session in every tab; an expiry only the tabs holding that token.
      if (s && (m.reason === "signed_out" ? s.userId === m.userId : s.token === m.token))
        set({ session: null, reason: m.reason, joining: false });
      return;
  }
});

let deviceSkipped = false;

/** A sign-in link in the address is the session the user asked for: the device is not used. */
export function skipRememberedDevice(): void {
  deviceSkipped = true;
}

/** No other tab answered: the remembered device's session, if this browser has one, else the form. */
async function resumeFromDevice(): Promise<void> {
  if (!state.joining) return;
  const grant = deviceSkipped ? null : await sessionFromDevice(() => state.joining);
  if (grant && state.joining) startSession(grant);
  else if (state.joining) set({ ...state, joining: false });
}

if (state.joining) {
  post({ type: "ask" });
  window.setTimeout(() => void resumeFromDevice(), JOIN_WAIT_MS);
}
scheduleTimers();
for (const type of ACTIVITY_EVENTS)
  window.addEventListener(
    type,
    () => {
      lastActivityMs = Date.now();
      maybeRenew();
    },
    { capture: true, passive: true },
  );
// A laptop that slept past the expiry: timers are late, so check when the tab comes back.
document.addEventListener("visibilitychange", () => {
  const s = state.session;
  if (document.visibilityState === "visible" && s && Date.parse(s.expiresAt) <= Date.now()) expireSession();
});
