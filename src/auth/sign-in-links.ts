// One-time sign-in links (docs/session-threat-model.md): a way back into the
// dashboard without the API key, for the user whose key sits in a script or was printed once. A
// link is a random token ("mpl_" + 40 base62 characters), shown once, stored as its SHA-256 only,
// good for SIGN_IN_LINK_TTL_MS and for one use. It is tied to one key of its user that may open
// sessions (a `custom` key) and opens a session of that key, so revoking the key refuses the link
// and ends the session it opened. Minting needs exactly the power the link carries: the key
// itself (or the operator). A session cannot mint one, or a stolen session token could chain
// links into fresh sessions forever, past SESSION_MAX_HOURS and SESSION_REAUTH_SECONDS.
import type { Database } from "../db/client.ts";
import { findApiKeyById, listApiKeysOfUser } from "../db/queries/api-keys.ts";
import {
  consumeSignInLink,
  deleteExpiredSignInLinks,
  insertSignInLink,
} from "../db/queries/sign-in-links.ts";
import { AppError, conflict, forbidden, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { randomToken, sha256Hex } from "../lib/tokens.ts";
import type { IssuedSession } from "./jwt.ts";
import { canOpenSessions } from "./principal.ts";
import type { SessionService } from "./sessions.ts";

const SIGN_IN_LINK_PREFIX = "mpl_";
const RANDOM_LENGTH = 40;
/** Long enough to copy a link from a terminal or a message into a browser; short if it leaks. */
const SIGN_IN_LINK_TTL_MS = 15 * 60_000;

/** A link as minted: its token is shown once and never stored. */
export interface MintedSignInLink {
  token: string;
  userId: string;
  /** The key the link (and the session it opens) is tied to. */
  apiKeyId: string;
  expiresAt: Date;
}

export type LinkRedemption =
  { ok: true; userId: string; apiKeyId: string; session: IssuedSession } | { ok: false; reason: "invalid" };

export interface SignInLinkService {
  /**
   * A link tied to `apiKeyId`, which must be an active key of the user that may open sessions;
   * with null (the operator), the user's newest such key. 404 for a key that is not the user's,
   * 403 for an integration key, 409 for a revoked key or a user without any such key.
   */
  mint(userId: string, apiKeyId: string | null): Promise<MintedSignInLink>;
  /** Uses the link once and opens a session of its key; `invalid` for anything else. */
  redeem(token: string): Promise<LinkRedemption>;
}

/**
 * The dashboard address that redeems a link: its hash route (web/src/lib/route.ts), the token in
 * the fragment, which browsers never send to a server (no access log, no Referer carries it).
 */
export const signInLinkUrl = (origin: string, token: string): string =>
  `${origin.replace(/\/+$/, "")}/#/sign-in?link=${token}`;

const looksLikeSignInLinkToken = (token: string): boolean =>
  token.startsWith(SIGN_IN_LINK_PREFIX) &&
  token.length === SIGN_IN_LINK_PREFIX.length + RANDOM_LENGTH &&
  /^[0-9A-Za-z]+$/.test(token.slice(SIGN_IN_LINK_PREFIX.length));

export function createSignInLinkService(
  db: Database,
  sessions: Pick<SessionService, "open">,
  clock: Clock,
): SignInLinkService {
  /** The key a link of this user may be tied to; throws the refusal otherwise. */
  async function linkKeyOf(userId: string, apiKeyId: string | null): Promise<string> {
    if (apiKeyId === null) {
      const keys = await listApiKeysOfUser(db, userId);
      const newest = keys.find((k) => k.isActive && canOpenSessions(k.purpose));
      if (!newest)
        throw conflict(
          "This user has no active custom API key to tie a sign-in link to: create one first (mailprobe keys create)",
        );
      return newest.id;
    }
    const key = await findApiKeyById(db, apiKeyId);
    if (!key || key.userId !== userId) throw notFound("API key");
    if (!canOpenSessions(key.purpose))
      throw forbidden(
        `An integration key (purpose "${key.purpose}") cannot open a session, nor a sign-in link`,
      );
    if (!key.isActive) throw conflict("This API key is revoked: a sign-in link needs an active key");
    return key.id;
  }

  return {
    async mint(userId, apiKeyId) {
      const keyId = await linkKeyOf(userId, apiKeyId);
      const at = clock.now();
      const token = SIGN_IN_LINK_PREFIX + randomToken(RANDOM_LENGTH);
      const expiresAt = new Date(at.getTime() + SIGN_IN_LINK_TTL_MS);
      await db.transaction(async (tx) => {
        await deleteExpiredSignInLinks(tx, userId, at);
        await insertSignInLink(tx, { tokenHash: sha256Hex(token), userId, apiKeyId: keyId, at, expiresAt });
      });
      return { token, userId, apiKeyId: keyId, expiresAt };
    },

    async redeem(token) {
      if (!looksLikeSignInLinkToken(token)) return { ok: false, reason: "invalid" };
      const hash = sha256Hex(token);
      // Used and turned into a session together: a session that could not be opened (no
      // JWT_SECRET) leaves the link unused.
      return db.transaction(async (tx): Promise<LinkRedemption> => {
        const link = await consumeSignInLink(tx, hash, clock.now());
        if (!link) return { ok: false, reason: "invalid" };
        const session = await sessions.open(link.userId, link.apiKeyId, tx);
        if (!session)
          throw new AppError("INTERNAL_ERROR", "Sessions are not configured on this server (JWT_SECRET)");
        return { ok: true, userId: link.userId, apiKeyId: link.apiKeyId, session };
      });
    },
  };
}
