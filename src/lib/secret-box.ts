import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

// Secrets at rest that must be read back (API keys for `GET /api/v1/api-keys?reveal=true`,
// webhook signing secrets): AES-256-GCM under ENCRYPTION_KEY. Layout of the stored value:
// base64(iv[12] | tag[16] | ciphertext). The caller binds the row's owner as additional
// authenticated data (a key's id, a user's id), so a ciphertext copied onto another row fails to
// decrypt.

const IV_BYTES = 12;
const TAG_BYTES = 16;

export function encryptSecret(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

export function decryptSecret(key: Buffer, stored: string, aad: string): string {
  const raw = Buffer.from(stored, "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
    "utf8",
  );
}
