// A secret stored sealed or, where no ENCRYPTION_KEY is set, in the clear, and saying which:
// "enc1:<base64>" is sealed (secret-box.ts, AES-256-GCM, bound to its owner's id and a purpose);
// anything else is the secret itself. Webhook signing secrets are stored this way
// (webhooks/secret-cipher.ts seals the ones written in the clear once a key is set).
import { decryptSecret, encryptSecret } from "./secret-box.ts";

const SEALED = "enc1:";

export interface SecretSealer {
  /** Whether secrets are written sealed (an encryption key is configured). */
  readonly sealing: boolean;
  /** The value to store for `secret` of `ownerId`. */
  seal(ownerId: string, secret: string): string;
  /** The secret a stored value holds; throws when it is sealed and no key can open it. */
  open(ownerId: string, stored: string): string;
}

export const isSealed = (stored: string): boolean => stored.startsWith(SEALED);

/** `purpose` names what is sealed (it is authenticated with the owner: values of one purpose never open as another's). */
export function createSecretSealer(key: Buffer | null, purpose: string): SecretSealer {
  const aadOf = (ownerId: string): string => `${purpose}:${ownerId}`;
  return {
    sealing: key !== null,
    seal(ownerId, secret) {
      return key === null ? secret : SEALED + encryptSecret(key, secret, aadOf(ownerId));
    },
    open(ownerId, stored) {
      if (!isSealed(stored)) return stored;
      if (key === null) throw new Error(`a ${purpose} is encrypted but ENCRYPTION_KEY is not set`);
      return decryptSecret(key, stored.slice(SEALED.length), aadOf(ownerId));
    },
  };
}
