// The remembered device from the dashboard's side (docs/dashboard-session.md, "Remembered
// devices"). The credential is an HttpOnly cookie this code can neither read nor write: the
// browser sends it to /api/v1/auth/device only, and the server replaces it on every use. So a tab
// opened without a session simply asks; a browser that is not remembered gets 401 and the form.
// Plain fetch, not api.ts: session.ts calls this, and api.ts depends on session.ts.
import type { SessionGrant } from "./session.ts";

const DEVICE_PATH = "/api/v1/auth/device";
/** Tabs of this browser take turns: the cookie's value works once (a second use is a stolen copy). */
const LOCK = "mailprobe.device";

async function ask(): Promise<Response> {
  // The JSON body makes any other origin's request need a CORS preflight, which is never granted.
  return fetch(DEVICE_PATH, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
    credentials: "same-origin",
  });
}

/**
 * A session opened by this browser's device cookie, or null (not remembered, expired, revoked,
 * offline). `stillWanted` is asked once this tab's turn comes: another tab may have shared its
 * session meanwhile. 409 means another tab used the cookie at the same moment: its reply carried
 * the new cookie, so one more try succeeds.
 */
export async function sessionFromDevice(stillWanted: () => boolean): Promise<SessionGrant | null> {
  const attempt = async (): Promise<SessionGrant | null> => {
    for (let i = 0; i < 2 && stillWanted(); i++) {
      const res = await ask();
      if (res.ok) return (await res.json()) as SessionGrant;
      if (res.status !== 409) return null;
    }
    return null;
  };
  try {
    return navigator.locks ? await navigator.locks.request(LOCK, attempt) : await attempt();
  } catch {
    return null;
  }
}

/** "Forget this device": the server revokes it and clears the cookie (sign-out does this). */
export function forgetDevice(): void {
  void fetch(DEVICE_PATH, { method: "DELETE", credentials: "same-origin", keepalive: true }).catch(() => {});
}
