// Evidence beats wording, but only evidence that the mailbox does not exist. A permanent rejection
// whose text no rule recognises (after every rule that blames our IP, our sender, the recipient's
// block of our sender, policy or rate has had its chance) is `mailbox_missing` only when both hold:
// - it looks like the rejection of a mailbox known not to exist: the random catch-all probe's
//   rejection, with the same code, the same enhanced code and the same text once the address and
//   per-reply ids are taken out;
// - the server is shown to take our mail: the postmaster control accepted (RFC 5321 §4.5.1: every
//   domain must), or an ordinary recipient was accepted in this session or recently on this host.
// Otherwise it stays `unknown`. An accepted recipient alone is not enough: a server that takes our
// mail may still refuse us for one recipient (Mimecast's "550 Envelope blocked - User Entry" is the
// recipient's personal block list, and the mailbox exists), and only the probe shows what "no such
// mailbox" looks like on that server. postmaster, abuse and hostmaster are no evidence of an
// ordinary acceptance: many configurations exempt them from the IP and policy checks that refuse
// everyone else.
import type { SmtpReply } from "./smtp/reply-reader.ts";
import { classifyReply, matchRule, type ReplyVerdict } from "./smtp/replies.ts";

/** Role mailboxes that configurations commonly exempt from blocklist and policy checks (RFC 2142). */
const EXEMPT_LOCAL_PARTS: ReadonlySet<string> = new Set(["postmaster", "abuse", "hostmaster"]);

const isExemptAddress = (address: string): boolean =>
  EXEMPT_LOCAL_PARTS.has(address.slice(0, address.lastIndexOf("@")).toLowerCase());

export interface ServerEvidence {
  /** Where an ordinary recipient was accepted: this session, this host within the TTL, or nowhere. */
  acceptedOrdinary: "session" | "host" | null;
  /** The postmaster control: accepted, permanently rejected, or not known. */
  control: "accepted" | "rejected" | null;
  /** The random probe's permanent rejection, when it had one, with the probe address. */
  probeRejection: { address: string; reply: SmtpReply } | null;
}

export interface DecidedReply {
  verdict: ReplyVerdict;
  /**
   * One line saying what decided, for the stored record and the logs: "rule NAME: …" (the
   * wording decided), "evidence: …" (the server's other answers decided) or "no evidence: …".
   */
  evidence: string;
}

/** True when the server's other answers, not the wording, decided the verdict. */
export const decidedByEvidence = (evidence: string): boolean => evidence.startsWith("evidence: ");

const MISSING: ReplyVerdict = { kind: "mailbox_missing" };

/** The reply's verdict, with an unrecognised permanent rejection decided by the server's other answers. */
export function decideReply(address: string, reply: SmtpReply, server: ServerEvidence): DecidedReply {
  const verdict = classifyReply(reply);
  const said = describeReply(reply);
  if (!(verdict.kind === "unknown" && verdict.reason === "unclassified_rejection" && reply.code >= 500)) {
    return { verdict, evidence: `rule ${matchRule(reply)?.name ?? "none"}: ${said}` };
  }
  const probe = server.probeRejection;
  if (probe === null) {
    return { verdict, evidence: `no evidence: ${said}; no rejection of the probe to compare with` };
  }
  if (!(probe.address === address || sameReply(reply, address, probe.reply, probe.address))) {
    return { verdict, evidence: `no evidence: ${said}; the probe was not rejected alike` };
  }
  const takes = takesOurMail(server);
  if (takes.length > 0) {
    return {
      verdict: MISSING,
      evidence: `evidence: ${said} while ${takes.join(" and ")}; probe rejected alike`,
    };
  }
  if (server.control === "rejected") {
    return {
      verdict,
      evidence: `no evidence: ${said}; postmaster rejected too: the server may be refusing us`,
    };
  }
  return {
    verdict,
    evidence: `no evidence: ${said}; probe rejected alike, but nothing shows the server takes our mail`,
  };
}

/** What shows the server takes our mail, in words; empty when nothing does. */
function takesOurMail(server: ServerEvidence): string[] {
  const shown: string[] = [];
  if (server.control === "accepted") shown.push("postmaster accepted");
  if (server.acceptedOrdinary !== null) {
    const where = server.acceptedOrdinary === "session" ? "in this session" : "recently on this host";
    shown.push(`the server accepted an ordinary recipient ${where}`);
  }
  return shown;
}

/** `550 5.1.1 "<text>"`, the text cut to a readable length. */
export function describeReply(reply: SmtpReply): string {
  const text = reply.text.replace(/\s+/g, " ").trim();
  const short = text.length > 120 ? `${text.slice(0, 117)}...` : text;
  return `RCPT ${reply.code.toString()} "${short}"`;
}

/**
 * Same code, same enhanced code and same text once the address (and per-reply ids) are taken out.
 * The enhanced code is compared on its own: the id pattern below would swallow "5.1.10" or
 * "5.7.509" in the text, and a 5.1.1 beside a 5.7.1 is two different answers.
 */
export function sameReply(a: SmtpReply, aAddress: string, b: SmtpReply, bAddress: string): boolean {
  return (
    a.code === b.code &&
    a.enhanced === b.enhanced &&
    normaliseText(a.text, aAddress) === normaliseText(b.text, bAddress)
  );
}

function normaliseText(text: string, address: string): string {
  const at = address.lastIndexOf("@");
  const local = address.slice(0, at);
  let out = text.toLowerCase().split(address.toLowerCase()).join("<addr>");
  if (local.length >= 3) out = out.split(local.toLowerCase()).join("<local>");
  // Queue ids, trace ids and timestamps differ from reply to reply.
  return out
    .replace(/\b[\w.-]*\d[\w.-]{5,}\b/g, "#")
    .replace(/\s+/g, " ")
    .trim();
}

/** What earlier sessions of a domain taught (cached with its catch-all verdict). */
export interface KnownDomainAnswers {
  control: ServerEvidence["control"];
  probeRejection: ServerEvidence["probeRejection"];
}

/**
 * What a session's replies say about the server, completed by what earlier sessions taught: its
 * own control and probe answers win over cached ones; acceptance "in this session" over "recently
 * on this host".
 */
export function serverEvidenceOf(input: {
  replies: ReadonlyMap<string, SmtpReply>;
  control: string;
  probe: string | null;
  known: KnownDomainAnswers | undefined;
  hostAcceptedRecently: boolean;
}): ServerEvidence {
  const accepted = (reply: SmtpReply): boolean => reply.code >= 200 && reply.code < 300;
  let ordinary = false;
  for (const [address, reply] of input.replies) {
    if (accepted(reply) && !isExemptAddress(address)) ordinary = true;
  }
  const controlReply = input.replies.get(input.control);
  const probeReply = input.probe === null ? undefined : input.replies.get(input.probe);
  let control = input.known?.control ?? null;
  if (controlReply !== undefined) {
    control = accepted(controlReply) ? "accepted" : controlReply.code >= 500 ? "rejected" : null;
  }
  return {
    acceptedOrdinary: ordinary ? "session" : input.hostAcceptedRecently ? "host" : null,
    control,
    probeRejection:
      input.probe !== null && probeReply !== undefined && probeReply.code >= 500
        ? { address: input.probe, reply: probeReply }
        : (input.known?.probeRejection ?? null),
  };
}

/**
 * The RCPTs a domain's session asks, in order: the postmaster control (RFC 5321 §4.5.1: every
 * domain accepts postmaster; its answer tells a server that refuses us from one that refuses the
 * recipient) unless its answer is known or postmaster is itself a recipient, then the catch-all
 * probe when one is due, then the addresses.
 */
export function sessionRecipients(
  canonicals: readonly string[],
  control: string,
  probe: string | null,
  controlKnown: boolean,
): string[] {
  const withControl = !controlKnown && !canonicals.includes(control);
  return [...(withControl ? [control] : []), ...(probe === null ? [] : [probe]), ...canonicals];
}
