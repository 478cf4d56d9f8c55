import { newWebhookSecret } from "../lib/tokens.ts";
import type { Database } from "../db/client.ts";
import { insertUser, type User } from "../db/queries/users.ts";
import { grantCredits } from "../credits/ledger.ts";
import { OPERATOR_METADATA, requireApplied } from "../credits/service.ts";
import type { ApiKeysService } from "../keys/service.ts";
import { AppError } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { SQLSTATE, sqlState } from "../db/client.ts";
import type { SecretSealer } from "../lib/sealed-secret.ts";

export interface CreatedUser {
  user: User;
  apiKey: { id: string; plaintext: string };
}

export interface UsersService {
  /** Creates a user with an optional opening grant and a first API key, all in one transaction. */
  create(input: { email: string | null; credits: number }): Promise<CreatedUser>;
}

export function createUsersService(
  db: Database,
  clock: Clock,
  apiKeys: ApiKeysService,
  secrets: SecretSealer,
): UsersService {
  return {
    async create({ email, credits }) {
      try {
        return await db.transaction(async (tx) => {
          const at = clock.now();
          const id = newId();
          const webhookSecret = secrets.seal(id, newWebhookSecret());
          const user = await insertUser(tx, { id, email, webhookSecret, at });
          let balance = 0;
          if (credits > 0) {
            balance = requireApplied(
              await grantCredits(tx, {
                userId: user.id,
                amount: credits,
                reason: "initial_grant",
                metadata: { ...OPERATOR_METADATA },
                at,
              }),
            ).balanceAfter;
          }
          const key = await apiKeys.create(user.id, "default", "custom", tx);
          return { user: { ...user, balance }, apiKey: { id: key.record.id, plaintext: key.plaintext } };
        });
      } catch (e) {
        if (sqlState(e) === SQLSTATE.uniqueViolation) {
          throw new AppError("VALIDATION_ERROR", "A user with this email already exists", [
            { field: "email", reason: "already exists" },
          ]);
        }
        throw e;
      }
    },
  };
}
