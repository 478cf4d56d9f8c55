// A UDP port and its TCP twin (a DNS server listens on both under one number). The kernel picks
// the UDP port; the same number can already be another test file's TCP port (files run in
// parallel), so a clash releases what was bound and tries a fresh pair.

const ATTEMPTS = 20;

/**
 * Runs `bindOnce` (bind UDP on port 0, then TCP on its number; it releases what it bound when it
 * throws) until a pair binds, at most 20 times.
 */
export async function bindPortPair<T>(what: string, bindOnce: () => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      return await bindOnce();
    } catch (error) {
      lastError = error;
    }
  }
  throw new Error(`${what}: could not bind UDP+TCP on one port`, { cause: lastError });
}
