// Text PostgreSQL cannot store as sent: NUL (a `text` column refuses it with SQLSTATE 22021,
// jsonb with 22P05; unguarded, that surfaced as a 500 on ten request paths) and unpaired
// UTF-16 surrogates (the drivers silently store U+FFFD instead, so the stored value is not the
// one sent). With the `u` flag a well-formed surrogate pair is one code point, so \p{Cs} matches
// only the unpaired halves.
const UNSTORABLE = /[\0\p{Cs}]/u;

/** Why `text` cannot be stored, phrased as a field-error reason; null when it can. */
export function unstorableTextReason(text: string): string | null {
  const m = UNSTORABLE.exec(text);
  if (!m) return null;
  return m[0] === "\0"
    ? "must not contain a NUL character (\\u0000)"
    : "must be valid Unicode text (it contains an unpaired surrogate)";
}
