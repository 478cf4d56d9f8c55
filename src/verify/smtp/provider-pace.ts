// A session's part in a provider's pace (../pace.ts, docs/pacing.md): before the first RCPT, room
// for its recipients under the pace of the server's provider (or none, and why); at its end, what
// it asked and whether the provider refused our volume, which is how a pace is learnt.
import type { Clock } from "../../lib/clock.ts";
import { PaceRefusal } from "../pace.ts";
import type { PaceGrant, ProviderPace } from "../ports.ts";
import { restReasonOf } from "./egress.ts";
import type { SmtpReply } from "./reply-reader.ts";

/** A session's place under its provider's pace. */
export interface PaceTicket {
  provider: string;
  egress: string;
  startedAt: Date;
  /** Null when the provider is not paced (the session asks every recipient). */
  grant: PaceGrant | null;
}

export type PaceStart =
  { kind: "go"; ticket: PaceTicket } | { kind: "no_room"; provider: string; roomAt: Date };

/** Whom the session would ask, from which identity. */
interface At {
  provider: string;
  egress: string;
}

/**
 * The session's place under the pace of `provider`, asked once it holds a place at the server
 * (the identity is known then). `want` (the recipient count) is read only for a paced provider:
 * reading it fixes a micro-batch's recipients, which otherwise stay open until the banner.
 */
export async function takePace(
  pace: ProviderPace,
  clock: Clock,
  { provider, egress }: At,
  want: () => number,
): Promise<PaceStart> {
  const startedAt = clock.now();
  if (!(await pace.isPaced(provider, egress)))
    return { kind: "go", ticket: { provider, egress, startedAt, grant: null } };
  const answer = await pace.reserve(provider, egress, want());
  switch (answer.kind) {
    case "free":
      return { kind: "go", ticket: { provider, egress, startedAt, grant: null } };
    case "granted":
      return { kind: "go", ticket: { provider, egress, startedAt, grant: answer.grant } };
    case "no_room":
      return { kind: "no_room", provider, roomAt: answer.roomAt };
  }
}

/** No room: the worker pool's pace defers the group; the realtime one answers without asking. */
export function refuseOrAnswer(
  pace: ProviderPace,
  host: string,
  start: Extract<PaceStart, { kind: "no_room" }>,
): void {
  if (pace.whenNoRoom === "defer") throw new PaceRefusal(start.provider, host, start.roomAt);
}

// A limit on how many connections we hold at once, not on how many recipients we ask: the per-IP
// slots deal with it, and it teaches no pace.
const CONCURRENCY_TEXT = /too many (?:concurrent )?(?:connections|sessions)|connection (?:limit|rate)/i;

/**
 * A reply that refuses our volume, at whichever stage the provider says it (Gmail and Yahoo at
 * RCPT, Outlook.com's 4.7.650 at MAIL, Yahoo's [TSS04] also in its banner): a rate limit aimed at
 * our client, as opposed to a mailbox's own rate, a blocklist or a limit on concurrent connections.
 */
export const refusesOurVolume = (reply: SmtpReply): boolean =>
  restReasonOf(reply) === "rate_limited" && !CONCURRENCY_TEXT.test(reply.text);

/** The reply with which the provider refused our volume in this session, if one did. */
export function volumeRefusalOf(session: {
  replies: ReadonlyMap<string, SmtpReply>;
  failure: { reply?: SmtpReply } | null;
}): SmtpReply | null {
  const failed = session.failure?.reply;
  if (failed !== undefined && refusesOurVolume(failed)) return failed;
  for (const reply of session.replies.values()) if (refusesOurVolume(reply)) return reply;
  return null;
}

/** What the session asked, for the pace: RCPTs sent, answered, and whether the provider refused our volume. */
export function usageOf(
  ticket: PaceTicket,
  session: { rcptPerTransaction: readonly number[]; replies: ReadonlyMap<string, SmtpReply> },
  volumeRefusal: SmtpReply | null,
) {
  const asked = session.rcptPerTransaction.reduce((a, b) => a + b, 0);
  let accepted = 0;
  for (const reply of session.replies.values()) if (!refusesOurVolume(reply)) accepted++;
  return { ...ticket, asked, accepted, throttled: volumeRefusal !== null };
}
