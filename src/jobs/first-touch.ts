// A domain's first touch at a host that serves many domains of the queue.
//
// Every domain of a task gets its first session before any domain's bulk (claim lanes), so a
// domain that defers starts its retry chain early. At a provider hosting dozens of the list's
// domains (Google, Microsoft's tenant front ends, Mimecast) the first sessions still queue two at
// a time behind each other's whole first chunk: a deferring domain reached last there started
// its chain ~15 s into a 10,000-address task. There, a first session takes only the first
// FIRST_TOUCH_SIZE addresses (one RCPT write: a deferral shows in its replies) and the rest of
// the chunk waits until the host's other domains had theirs. The extra session costs an RSET
// and a MAIL on a connection that is reused anyway (the provider's slots never go idle while its
// domains queue), not a connection. A host serving one domain is never cut: there a second
// session would come after the idle-reuse window and cost a connection.
import { CLAIM_LANE, type JobRecord } from "../db/queries/jobs.ts";

/**
 * Addresses in a first touch: with the postmaster control and the catch-all probe, one RCPT write
 * under the default error budget (SMTP_ERROR_BUDGET 9).
 */
export const FIRST_TOUCH_SIZE = 7;

/** Other known domains at a host that make it crowded. */
export const CROWDED_HOST_DOMAINS = 3;

/**
 * Whether a claimed group may be cut to a first touch: an untried first chunk bigger than one,
 * claimed for the first time. The rest of a cut chunk goes back due from the touch's time, behind
 * the first chunks of the host's other domains, with its claim counted, so it is never cut again.
 */
export const mayCutToFirstTouch = (jobs: readonly JobRecord[]): boolean =>
  jobs.length > FIRST_TOUCH_SIZE &&
  jobs.every((j) => j.claimLane === CLAIM_LANE.firstChunk && j.retryResult === null && j.attempts === 1);
