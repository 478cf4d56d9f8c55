// The dashboard's session: a JWT from POST /api/v1/auth/session, kept in sessionStorage (this
// tab only, gone when it closes) with its expiry. The API key typed to sign in is never stored.
import { useEffect, useState } from "preact/hooks";

export interface Session {
  token: string;
  /** ISO 8601 expiry from the server. */
  expiresAt: string;
  userId: string;
  /** The key that opened the session (JWT claim api_key_id), to mark it in the keys list. */
  apiKeyId: string | null;
}

const STORAGE_KEY = "mailprobe.session";

export type SignedOutReason = "signed_out" | "expired" | null;

interface State {
  session: Session | null;
  reason: SignedOutReason;
}

const listeners = new Set<() => void>();
let expiryTimer: number | undefined;
let state: State = load();

/**
 * The stored session of this tab. One that expired while the tab was closed or asleep is
 * dropped from storage at once and reported as expired, so the sign-in form says why.
 */
function load(): State {
  try {
    const raw = window.sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return { session: null, reason: null };
    const s = JSON.parse(raw) as Session;
    if (typeof s.token === "string" && Date.parse(s.expiresAt) > Date.now())
      return { session: s, reason: null };
    window.sessionStorage.removeItem(STORAGE_KEY);
    return { session: null, reason: "expired" };
  } catch {
    return { session: null, reason: null };
  }
}

function set(next: State): void {
  state = next;
  try {
    if (next.session) window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next.session));
    else window.sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage refused (private mode quotas): the session still lives in memory.
  }
  scheduleExpiry();
  for (const l of listeners) l();
}

function scheduleExpiry(): void {
  window.clearTimeout(expiryTimer);
  const s = state.session;
  if (!s) return;
  // Timers beyond 2^31 ms fire at once; sessions last minutes, so cap defensively.
  const ms = Math.min(Date.parse(s.expiresAt) - Date.now(), 2 ** 31 - 1);
  expiryTimer = window.setTimeout(expireSession, Math.max(0, ms));
}

/** The `api_key_id` claim of a JWT (read, not verified: the server verifies). */
function apiKeyIdOf(token: string): string | null {
  try {
    const payload = token.split(".")[1] ?? "";
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    const claims = JSON.parse(json) as { api_key_id?: unknown };
    return typeof claims.api_key_id === "string" ? claims.api_key_id : null;
  } catch {
    return null;
  }
}

export const currentSession = (): Session | null => state.session;

export function startSession(s: { token: string; expires_at: string; user_id: string }): void {
  set({
    session: { token: s.token, expiresAt: s.expires_at, userId: s.user_id, apiKeyId: apiKeyIdOf(s.token) },
    reason: null,
  });
}

export function signOut(): void {
  set({ session: null, reason: "signed_out" });
}

/** Drops the token after a 401 or at its expiry; the sign-in form says why. */
export function expireSession(): void {
  if (state.session) set({ session: null, reason: "expired" });
}

export function useSession(): State {
  const [, force] = useState(0);
  useEffect(() => {
    const l = (): void => force((n) => n + 1);
    listeners.add(l);
    return () => listeners.delete(l);
  }, []);
  return state;
}

scheduleExpiry();
// A laptop that slept past the expiry: timers are late, so check when the tab comes back.
document.addEventListener("visibilitychange", () => {
  const s = state.session;
  if (document.visibilityState === "visible" && s && Date.parse(s.expiresAt) <= Date.now()) expireSession();
});
