// How many uploads this process takes at once. An upload is buffered (up to MAX_UPLOAD_BYTES),
// parsed on a thread and written in one transaction: each costs memory and the embedded
// database's one connection for as long as it runs. Unbounded, 80 uploads from 10 users queued
// for 308 s and grew the process to 2.3 GB while clients timed out (their uploads still
// committed). The gate answers at once instead, before the body is read: a user over their share
// gets 429, everyone beyond the process's capacity gets 503, both with Retry-After, and the
// client retries the same request (safely, with an Idempotency-Key).
import { AppError, serviceUnavailable } from "../lib/app-error.ts";

export interface UploadAdmissionLimits {
  /** Uploads of one user in progress at once, this process. */
  perUser: number;
  /** Uploads in progress at once, this process. */
  perProcess: number;
  /** Retry-After of a refusal, seconds. */
  retryAfterSeconds: number;
}

export interface UploadTicket {
  /** Frees the place; idempotent. */
  release(): void;
}

export type Admission = { ok: true; ticket: UploadTicket } | { ok: false; error: AppError };

export interface UploadAdmission {
  enter(userId: string): Admission;
  /** Uploads in progress now (for metrics and tests). */
  readonly inProgress: number;
}

export function createUploadAdmission(limits: UploadAdmissionLimits): UploadAdmission {
  const perUser = new Map<string, number>();
  let total = 0;
  return {
    get inProgress() {
      return total;
    },
    enter(userId) {
      const mine = perUser.get(userId) ?? 0;
      if (mine >= limits.perUser) {
        return {
          ok: false,
          error: new AppError(
            "RATE_LIMITED",
            `You have ${String(mine)} uploads in progress, the most at once; retry when one has been answered.`,
            undefined,
            { headers: { "retry-after": String(limits.retryAfterSeconds) } },
          ),
        };
      }
      if (total >= limits.perProcess) {
        return {
          ok: false,
          error: serviceUnavailable(
            `The server is busy with ${String(total)} uploads; retry in a few seconds.`,
            limits.retryAfterSeconds,
          ),
        };
      }
      perUser.set(userId, mine + 1);
      total += 1;
      let released = false;
      return {
        ok: true,
        ticket: {
          release() {
            if (released) return;
            released = true;
            total -= 1;
            const left = (perUser.get(userId) ?? 1) - 1;
            if (left <= 0) perUser.delete(userId);
            else perUser.set(userId, left);
          },
        },
      };
    },
  };
}
