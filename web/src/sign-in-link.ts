// Signing in with a one-time link (`#/sign-in?link=mpl_…`, minted by `mailprobe client
// sign-in-link` or the operator's `mailprobe users sign-in-link`). Runs when the dashboard loads,
// before the first render: the token leaves the address bar at once (history.replaceState, so it
// stays neither on screen nor in the tab's history entry), then is redeemed for a session like a
// key's. docs/session-threat-model.md says what this does and does not protect against.
import { redeemSignInLink } from "./api.ts";
import { signInLinkToken } from "./lib/route.ts";
import { skipRememberedDevice, startSession } from "./session.ts";

export interface LinkSignIn {
  /** The link is being redeemed: the sign-in form says so instead of asking for a key. */
  busy: boolean;
  /** Why the link was refused (used, expired, its key revoked) or could not be sent. */
  error: unknown;
}

let state: LinkSignIn = { busy: false, error: null };
const listeners = new Set<() => void>();

function set(next: LinkSignIn): void {
  state = next;
  for (const l of listeners) l();
}

export const linkSignIn = (): LinkSignIn => state;

/** Calls `listener` when the link's redemption starts or ends. */
export function onLinkSignIn(listener: () => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

async function redeem(token: string): Promise<void> {
  set({ busy: true, error: null });
  try {
    startSession(await redeemSignInLink(token));
    set({ busy: false, error: null });
  } catch (error) {
    set({ busy: false, error });
  }
}

/** Takes a link from the address (once, at load) and redeems it; nothing when there is none. */
export function takeSignInLink(): void {
  const token = signInLinkToken(window.location.hash);
  if (token === null) return;
  skipRememberedDevice();
  window.history.replaceState(window.history.state, "", `${window.location.pathname}#/verify`);
  void redeem(token);
}
