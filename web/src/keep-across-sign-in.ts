// What a page holds for the user that no server has yet (the list chosen on the Lists page and
// its preview), kept in this tab's memory while the sign-in form replaces the page after the
// session ends, so signing in again brings it back. Memory only (a File cannot be stored, and
// the user's data should not be); given back to the same user only; forgotten on sign-out.
import { currentSession, onSessionChange } from "./session.ts";

export interface Keeper<T> {
  /** The kept value, if the signed-in user is the one who left it. */
  take(): T | null;
  keep(value: T | null): void;
}

const keepers: Array<() => void> = [];

onSessionChange(({ reason }) => {
  if (reason === "signed_out") for (const forget of keepers) forget();
});

export function keeper<T>(): Keeper<T> {
  let kept: { userId: string; value: T } | null = null;
  keepers.push(() => (kept = null));
  return {
    take: () => (kept && kept.userId === currentSession()?.userId ? kept.value : null),
    keep(value) {
      const userId = currentSession()?.userId;
      kept = value !== null && userId ? { userId, value } : null;
    },
  };
}
