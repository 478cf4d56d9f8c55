import { randomToken, sha256Hex } from "../lib/tokens.ts";

// "mpk_" + 40 base62 characters ≈ 238 bits of entropy. The prefix lets secret scanners and
// support staff recognise a mailprobe key; the first 12 characters are stored in clear so users
// can tell their keys apart in listings.
const API_KEY_PREFIX = "mpk_";
const RANDOM_LENGTH = 40;
const VISIBLE_LENGTH = 12;

export interface GeneratedApiKey {
  plaintext: string;
  hash: string;
  prefix: string;
}

export function generateApiKey(): GeneratedApiKey {
  const plaintext = API_KEY_PREFIX + randomToken(RANDOM_LENGTH);
  return { plaintext, hash: hashApiKey(plaintext), prefix: plaintext.slice(0, VISIBLE_LENGTH) };
}

/** Keys are random and long, so one unsalted SHA-256 is enough for a unique lookup index. */
export const hashApiKey = (plaintext: string): string => sha256Hex(plaintext);

export const looksLikeApiKey = (token: string): boolean =>
  token.startsWith(API_KEY_PREFIX) && token.length === API_KEY_PREFIX.length + RANDOM_LENGTH;
