// Deterministic generator of large, realistic worlds for the accuracy test and the benchmarks.
// Same seed and options -> same spec and addresses, on every machine (mulberry32 PRNG, no Date,
// no Math.random). Big providers share MX hosts between domains, as in real life, so a shared
// host never carries a per-domain fault: faults live on per-domain hosts only.
//
// Backward compatibility: behaviours and options added later default to 0/off and only draw from
// the PRNG when chosen, so an existing seed and mix give the same world as before. STOCK_MIX is
// a mix with every behaviour in it, for benches that want the whole zoo.
//
// Overlays (sender blocks, busy mailboxes, recipients that end the connection, tenants
// of a shared front end) are in DEFAULT_MIX, carved out of `normal`'s share: the main draw sees
// one bucket "normal + every overlay" where `normal` used to be, so it picks exactly the domains
// it picked before (DEFAULT_MIX's normal + overlays is the old 52), and a second PRNG stream
// turns some of those normal domains into overlays AFTER they were built and populated as
// before. Every other domain, and every address list, stays as it was for a seed; only the
// overlaid domains' ground truth changes (and, for tenants, their MX host).

import { STOCK_REPLIES } from "./rules.ts";
import type { DomainSpec, FixedReply, HostSpec, ServerKind, WorldSpec } from "./types.ts";

export type Behaviour =
  | "normal" //            MX with known mailboxes; unknown users rejected (some full/disabled mailboxes)
  | "catchall" //          every RCPT accepted
  | "a_only" //            no MX, implicit MX on the domain's A record
  | "null_mx" //           MX 0 "."
  | "nxdomain"
  | "no_records" //        name exists, no MX and no A
  | "servfail"
  | "dns_timeout" //       the DNS server never answers (slow: off by default)
  | "mx_no_address" //     MX hosts without A records
  | "greylist" //          first RCPT of a triplet gets 451
  | "blocklist_rcpt" //    every RCPT refused with a blocklist text
  | "policy_rcpt" //       every RCPT refused with a 5.7.1 policy text
  | "connect_blocklist" // 554 blocklist reply instead of the banner
  | "refused_primary" //   primary MX refuses connections, secondary works
  | "all_refused" //       the only MX refuses connections
  | "drop_after_banner" // banner, then the connection is closed
  | "tarpit" //            banner after 12 s (slow: off by default)
  | "rcpt_limit" //        at most 3-5 RCPT per transaction, then 452
  | "rate_limit" //        421 after 10 connections (off by default: state outlives a run)
  // Stock behaviours of real mail software (all off by default):
  | "postfix_error_limits" //      Postfix kind with smtpd soft/hard error limits 10/20, 1 s sleep
  | "rcpt_per_connection" //       at most 10-30 RCPT per connection, then 452
  | "starttls_offer" //            STARTTLS advertised
  | "starttls_require" //          MAIL/RCPT before STARTTLS get 530 5.7.0
  | "greylist_postgrey" //         postgrey wording (450 4.2.0 …), postmaster/abuse not greylisted
  | "greylist_hint" //             "451 4.7.1 … try again in N seconds"
  | "rbl_except_postmaster" //     every RCPT but postmaster/abuse refused with a Spamhaus text
  | "block_except_postmaster_silent" // the same with a wording that names no block
  | "stock_unknown_user" //        unknown users get Exim/OpenSMTPD/IronPort wordings (no 5.1.1 text)
  | "opensmtpd" //                 OpenSMTPD persona (524 5.2.4 for unknown users, no PIPELINING)
  | "exchange" //                  Exchange on-premises persona (550 5.1.10 RESOLVER.ADR…)
  | "reject_postmaster" //         postmaster@ is refused like any unknown user
  // Overlays of a normal domain (see the header): in DEFAULT_MIX, carved out of normal's share.
  | "sender_block" //              1-2 mailboxes block our sender (Mimecast "550 Envelope blocked - User Entry")
  | "busy_mailbox" //              1-2 mailboxes get Gmail's "450 4.2.1 … receiving mail too quickly"
  | "close_on_rcpt_421" //         one address gets "421 4.7.0 IP not in whitelist for RCPT domain", then close
  | "close_on_rcpt_drop" //        one address makes the host drop the connection without a reply
  | "tenant_front_end"; //         the domain is a tenant of the world's one M365-like front end (one IP)

export interface GenerateOptions {
  seed: number;
  domains: number;
  /** Addresses per domain, fixed or [min, max] inclusive. Default [3, 8]. */
  addressesPerDomain?: number | [number, number];
  latencyMs?: number;
  /**
   * Relative weights, merged over DEFAULT_MIX (set a behaviour to 0 to exclude it). The overlays'
   * weights come on top of `normal`'s in the main draw (see the header).
   */
  mix?: Partial<Record<Behaviour, number>>;
  /** Share (0-1) of MX domains whose address list also gets postmaster@ (and, half of those,
   * abuse@). Default 0. */
  roleAddressShare?: number;
}

export interface GeneratedWorld {
  spec: WorldSpec;
  addresses: string[];
}

export const DEFAULT_MIX: Readonly<Record<Behaviour, number>> = {
  // 52 before the overlays; normal + overlays stays 52 (see the header).
  normal: 40,
  catchall: 8,
  a_only: 3,
  null_mx: 2,
  nxdomain: 5,
  no_records: 2,
  servfail: 2,
  dns_timeout: 0,
  mx_no_address: 1,
  greylist: 4,
  blocklist_rcpt: 3,
  policy_rcpt: 1,
  connect_blocklist: 1,
  refused_primary: 4,
  all_refused: 1,
  drop_after_banner: 1,
  tarpit: 0,
  rcpt_limit: 6,
  rate_limit: 0,
  postfix_error_limits: 0,
  rcpt_per_connection: 0,
  starttls_offer: 0,
  starttls_require: 0,
  greylist_postgrey: 0,
  greylist_hint: 0,
  rbl_except_postmaster: 0,
  block_except_postmaster_silent: 0,
  stock_unknown_user: 0,
  opensmtpd: 0,
  exchange: 0,
  reject_postmaster: 0,
  sender_block: 2,
  busy_mailbox: 2,
  close_on_rcpt_421: 1,
  close_on_rcpt_drop: 1,
  tenant_front_end: 6,
};

/**
 * The benches' throughput world: DEFAULT_MIX without the behaviours that hold a domain back by
 * design (greylisting and busy mailboxes defer, rate limits, timeouts, tarpits, refused or
 * dropped connections), so a run measures the pipeline, not the retry schedule.
 */
export const NO_HOLDUPS_MIX: Readonly<Partial<Record<Behaviour, number>>> = {
  greylist: 0,
  rate_limit: 0,
  servfail: 0,
  all_refused: 0,
  drop_after_banner: 0,
  dns_timeout: 0,
  tarpit: 0,
  busy_mailbox: 0,
  close_on_rcpt_421: 0,
  close_on_rcpt_drop: 0,
};

/**
 * Every behaviour, for benches: DEFAULT_MIX with the stock behaviours of real mail software added
 * (weights are relative; these sum to 100 + the default 100, so each weight w is about w/2 % of
 * the domains): Postfix error limits 5, per-connection RCPT cap 3, STARTTLS offered 8 / required
 * 2, postgrey 2, greylist hint 2, RBL except postmaster 2 (named) + 1 (silent), stock unknown-user
 * wordings 4, OpenSMTPD 2, Exchange 3, postmaster refused 1, with normal lowered to keep 100.
 * The overlays keep DEFAULT_MIX's weights (12), carved out of normal's 17.
 */
export const STOCK_MIX: Readonly<Record<Behaviour, number>> = {
  ...DEFAULT_MIX,
  normal: 5,
  postfix_error_limits: 5,
  rcpt_per_connection: 3,
  starttls_offer: 8,
  starttls_require: 2,
  greylist_postgrey: 2,
  greylist_hint: 2,
  rbl_except_postmaster: 2,
  block_except_postmaster_silent: 1,
  stock_unknown_user: 4,
  opensmtpd: 2,
  exchange: 3,
  reject_postmaster: 1,
};

/** mulberry32: tiny, fast, good enough for test data, identical on every platform. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  float(): number {
    return this.next();
  }
  /** Integer in [min, max], inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = (Object.entries(weights) as [K, number][]).filter(([, w]) => w > 0);
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [key, w] of entries) {
      roll -= w;
      if (roll < 0) return key;
    }
    const last = entries.at(-1);
    if (!last) throw new Error("every weight is 0");
    return last[0];
  }
}

const FIRST = (
  "james mary john patricia robert jennifer michael linda david elizabeth william barbara " +
  "richard susan joseph jessica thomas sarah carlos karen daniel lisa matthew nancy anthony " +
  "sandra mark ashley paul emily steven donna andrew michelle kevin carol brian amanda george " +
  "melissa lucas sofia mateo chloe noah emma liam olivia yuki ananya"
).split(" ");
const LAST = (
  "smith johnson williams brown jones garcia miller davis rodriguez martinez hernandez lopez " +
  "gonzalez wilson anderson thomas taylor moore jackson martin lee perez thompson white " +
  "harris sanchez clark ramirez lewis robinson walker young allen king wright scott torres " +
  "nguyen hill flores green adams nelson baker hall rivera campbell mitchell carter roberts"
).split(" ");
const ROLES = ["info", "sales", "support", "contact", "admin", "billing", "hr", "office", "hello", "jobs"];
const WORDS_A = (
  "acme apex blue bright cedar delta eagle falcon global granite harbor iron jade lunar maple " +
  "nova orbit pioneer quantum river summit terra unity vertex willow zenith coral silver " +
  "north oak"
).split(" ");
const WORDS_B = (
  "labs systems media logistics health foods studio capital works partners software energy " +
  "travel legal design motors dental realty consulting supply"
).split(" ");

function localPart(rng: Rng): string {
  const first = rng.pick(FIRST);
  const last = rng.pick(LAST);
  switch (rng.int(0, 9)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return `${first}.${last}`;
    case 4:
      return `${first.charAt(0)}${last}`;
    case 5:
      return `${first}_${last}`;
    case 6:
      return `${first}${last.charAt(0)}`;
    case 7:
      return first;
    case 8:
      return `${first}.${last}${rng.int(1, 99).toString()}`;
    default:
      return rng.pick(ROLES);
  }
}

function distinctLocalParts(rng: Rng, count: number, avoid: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (let tries = 0; out.size < count && tries < count * 50; tries++) {
    const candidate = localPart(rng);
    if (!avoid.has(candidate)) out.add(candidate);
  }
  for (let n = 1; out.size < count; n++) out.add(`user${n.toString()}.${rng.int(1000, 9999).toString()}`);
  return [...out];
}

/** MX hosts shared by every domain hosted at the same provider (one spec object per name). */
interface SharedHosts {
  google: HostSpec[];
  yahoo: HostSpec[];
  mimecast: HostSpec[];
}

function sharedHosts(): SharedHosts {
  return {
    google: [
      { name: "aspmx.l.google.com", preference: 1, kind: "google" },
      { name: "alt1.aspmx.l.google.com", preference: 5, kind: "google" },
    ],
    yahoo: [
      { name: "mta5.am0.yahoodns.net", preference: 1, kind: "yahoo" },
      { name: "mta6.am0.yahoodns.net", preference: 1, kind: "yahoo" },
    ],
    mimecast: [
      { name: "eu-smtp-inbound-1.mimecast.com", preference: 10, kind: "mimecast" },
      { name: "eu-smtp-inbound-2.mimecast.com", preference: 10, kind: "mimecast" },
    ],
  };
}

const KIND_WEIGHTS: Readonly<Record<ServerKind, number>> = {
  google: 26,
  microsoft365: 22,
  postfix: 18,
  exim: 6,
  proofpoint: 6,
  mimecast: 5,
  yahoo: 4,
  outlook: 3,
  generic: 2,
  // Only through their own behaviours ("opensmtpd", "exchange"): a weight here would change the
  // worlds of existing seeds.
  opensmtpd: 0,
  exchange: 0,
};

/** Kinds whose MX hosts belong to one domain, so they may carry per-domain faults. */
const OWN_HOST_KINDS: readonly ServerKind[] = [
  "postfix",
  "postfix",
  "exim",
  "microsoft365",
  "proofpoint",
  "generic",
];

const dashed = (domain: string): string => domain.replace(/\./g, "-");

/** The 1-2 MX hosts of a domain at a provider of this kind. */
function hostsFor(kind: ServerKind, domain: string, rng: Rng, shared: SharedHosts): HostSpec[] {
  switch (kind) {
    case "google":
      return rng.chance(0.6) ? [...shared.google] : shared.google.slice(0, 1);
    case "yahoo":
      return [...shared.yahoo];
    case "mimecast":
      return [...shared.mimecast];
    case "microsoft365":
      return [{ name: `${dashed(domain)}.mail.protection.outlook.com`, preference: 0, kind }];
    case "outlook":
      return [{ name: `${dashed(domain)}.olc.protection.outlook.com`, preference: 5, kind }];
    case "proofpoint": {
      const id = rng.int(100000, 999999).toString().padStart(8, "0");
      return [
        { name: `mx0a-${id}.pphosted.com`, preference: 10, kind },
        { name: `mx0b-${id}.pphosted.com`, preference: 10, kind },
      ];
    }
    case "exim":
    case "opensmtpd":
      return [{ name: `mail.${domain}`, preference: 10, kind }];
    case "exchange":
      return [{ name: `exchange.${domain}`, preference: 10, kind }];
    case "generic":
      return [{ name: `smtp.${domain}`, preference: 10, kind }];
    case "postfix": {
      const primary: HostSpec = { name: `mx1.${domain}`, preference: 10, kind };
      return rng.chance(0.5) ? [primary, { name: `mx2.${domain}`, preference: 20, kind }] : [primary];
    }
  }
}

const BLOCKLIST_RCPT: readonly { code: number; text: string }[] = [
  {
    code: 554,
    text: "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/127.0.0.1",
  },
  {
    code: 550,
    text: "5.7.606 Access denied, banned sending IP [127.0.0.1]. To request removal from this list please visit https://sender.office.com/",
  },
  { code: 554, text: "5.7.1 <unknown[127.0.0.1]>: Client host rejected: Access denied" },
];

/** Applies the fault of a behaviour to the domain's (own) hosts. */
function withFault(behaviour: Behaviour, hosts: HostSpec[], rng: Rng): HostSpec[] {
  const [primary, ...rest] = hosts;
  if (!primary) return hosts;
  switch (behaviour) {
    case "mx_no_address":
      return hosts.map((h) => ({ ...h, hasAddress: false }));
    case "blocklist_rcpt":
      return hosts.map((h) => ({ ...h, rcptReply: rng.pick(BLOCKLIST_RCPT) }));
    case "policy_rcpt":
      return hosts.map((h) => ({
        ...h,
        rcptReply: { code: 550, text: "5.7.1 Recipient address rejected: Access denied by policy" },
      }));
    case "connect_blocklist":
      return hosts.map((h) => ({
        ...h,
        connectReply: {
          code: 554,
          text: "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using b.barracudacentral.org (blocklist)",
        },
      }));
    case "refused_primary":
      return [
        { ...primary, preference: 10, refuseConnections: true },
        { ...primary, name: `backup-mx.${primary.name}`, preference: 20 },
      ];
    case "all_refused":
      return [{ ...primary, refuseConnections: true }];
    case "drop_after_banner":
      return [{ ...primary, dropAfterBanner: true }];
    case "tarpit":
      return [{ ...primary, bannerDelayMs: 12_000 }];
    case "rcpt_limit":
      return [{ ...primary, maxRcptPerMessage: rng.int(3, 5) }, ...rest];
    case "rate_limit":
      return [{ ...primary, rateLimitAfterConnections: 10 }];
    case "postfix_error_limits":
      return hosts.map((h) => ({ ...h, postfixErrorLimits: true }));
    case "rcpt_per_connection": {
      const cap = rng.int(10, 30);
      return hosts.map((h) => ({ ...h, maxRcptPerConnection: cap }));
    }
    case "starttls_offer":
      return hosts.map((h) => ({ ...h, startTls: "offer" }));
    case "starttls_require":
      return hosts.map((h) => ({ ...h, startTls: "require" }));
    case "rbl_except_postmaster":
      return hosts.map((h) => ({ ...h, blockExceptPostmaster: STOCK_REPLIES.spamhausBlock }));
    case "block_except_postmaster_silent": {
      const reply = rng.pick(SILENT_BLOCKS);
      return hosts.map((h) => ({ ...h, blockExceptPostmaster: reply }));
    }
    case "stock_unknown_user": {
      const reply = rng.pick(STOCK_UNKNOWN_USER);
      return hosts.map((h) => ({ ...h, unknownUserReply: reply }));
    }
    case "normal":
    case "catchall":
    case "greylist":
    case "a_only":
    case "null_mx":
    case "nxdomain":
    case "no_records":
    case "servfail":
    case "dns_timeout":
    case "greylist_postgrey":
    case "greylist_hint":
    case "opensmtpd":
    case "exchange":
    case "reject_postmaster":
    case "sender_block":
    case "busy_mailbox":
    case "close_on_rcpt_421":
    case "close_on_rcpt_drop":
    case "tenant_front_end":
      return hosts;
  }
}

const SILENT_BLOCKS: readonly FixedReply[] = [
  STOCK_REPLIES.eximAdministrativeProhibition,
  STOCK_REPLIES.plainRejected,
];

const STOCK_UNKNOWN_USER: readonly FixedReply[] = [
  STOCK_REPLIES.eximUnrouteable,
  STOCK_REPLIES.opensmtpdInvalid,
  STOCK_REPLIES.ironportRejected,
];

/** Behaviours that come with their own server software. */
const FORCED_KIND: Partial<Record<Behaviour, ServerKind>> = {
  postfix_error_limits: "postfix",
  greylist_postgrey: "postfix",
  opensmtpd: "opensmtpd",
  exchange: "exchange",
};

const DNS_ONLY: Partial<Record<Behaviour, DomainSpec["dns"]>> = {
  null_mx: "null_mx",
  nxdomain: "nxdomain",
  no_records: "no_records",
  servfail: "servfail",
  dns_timeout: "timeout",
};

const NEEDS_OWN_HOST: ReadonlySet<Behaviour> = new Set<Behaviour>([
  "mx_no_address",
  "blocklist_rcpt",
  "policy_rcpt",
  "connect_blocklist",
  "refused_primary",
  "all_refused",
  "drop_after_banner",
  "tarpit",
  "rcpt_limit",
  "rate_limit",
  "greylist",
  "postfix_error_limits",
  "rcpt_per_connection",
  "starttls_offer",
  "starttls_require",
  "greylist_postgrey",
  "greylist_hint",
  "rbl_except_postmaster",
  "block_except_postmaster_silent",
  "stock_unknown_user",
]);

function makeDomain(name: string, behaviour: Behaviour, rng: Rng, shared: SharedHosts): DomainSpec {
  const dns = DNS_ONLY[behaviour];
  if (dns) return { name, dns };
  if (behaviour === "a_only") return { name, dns: "a_only", hosts: [{ name, kind: "postfix" }] };
  const kind =
    FORCED_KIND[behaviour] ??
    (NEEDS_OWN_HOST.has(behaviour) ? rng.pick(OWN_HOST_KINDS) : rng.weighted(KIND_WEIGHTS));
  const domain: DomainSpec = { name, hosts: withFault(behaviour, hostsFor(kind, name, rng, shared), rng) };
  if (behaviour === "catchall") domain.catchAll = true;
  if (behaviour === "greylist") domain.greylistSeconds = 300;
  if (behaviour === "greylist_postgrey")
    Object.assign(domain, { greylistSeconds: 300, greylistStyle: "postgrey" });
  if (behaviour === "greylist_hint") Object.assign(domain, { greylistSeconds: 300, greylistStyle: "hint" });
  if (behaviour === "reject_postmaster") domain.rejectPostmaster = true;
  return domain;
}

function countFor(option: GenerateOptions["addressesPerDomain"], rng: Rng): number {
  if (typeof option === "number") return option;
  const [min, max] = option ?? [3, 8];
  return rng.int(min, max);
}

/** Fills mailboxes (and a few full/disabled ones) and returns the addresses to verify. */
function populate(domain: DomainSpec, count: number, rng: Rng): string[] {
  const existing = Math.max(2, Math.round(count * (0.3 + rng.float() * 0.5)));
  const mailboxes = distinctLocalParts(rng, existing + rng.int(1, 4), new Set());
  domain.mailboxes = mailboxes;
  const taken = new Set(mailboxes);
  const locals: string[] = mailboxes.slice(0, Math.min(existing, count));
  if (!domain.catchAll && domain.hosts && rng.chance(0.2)) {
    const [full, disabled] = distinctLocalParts(rng, 2, taken);
    if (full && rng.chance(0.5)) domain.fullMailboxes = [full];
    else if (disabled) domain.disabledMailboxes = [disabled];
    for (const l of [...(domain.fullMailboxes ?? []), ...(domain.disabledMailboxes ?? [])]) taken.add(l);
    locals.push(...(domain.fullMailboxes ?? []), ...(domain.disabledMailboxes ?? []));
  }
  const missing = Math.max(0, count - locals.length);
  locals.push(...distinctLocalParts(rng, missing, taken));
  return locals.slice(0, count).map((l) => `${l}@${domain.name}`);
}

const OVERLAYS = [
  "sender_block",
  "busy_mailbox",
  "close_on_rcpt_421",
  "close_on_rcpt_drop",
  "tenant_front_end",
] as const satisfies readonly Behaviour[];
type Overlay = (typeof OVERLAYS)[number];

/** The mix the main draw sees: overlays folded into normal's bucket, at normal's place. */
function mainDraw(mix: Readonly<Record<Behaviour, number>>): Record<Behaviour, number> {
  const folded = { ...mix };
  for (const overlay of OVERLAYS) {
    folded.normal += Math.max(0, folded[overlay]);
    folded[overlay] = 0;
  }
  return folded;
}

/** Inside the normal bucket: stays normal, or becomes an overlay (second PRNG stream). */
function overlayDraw(mix: Readonly<Record<Behaviour, number>>): Record<"normal" | Overlay, number> {
  return {
    normal: mix.normal,
    sender_block: mix.sender_block,
    busy_mailbox: mix.busy_mailbox,
    close_on_rcpt_421: mix.close_on_rcpt_421,
    close_on_rcpt_drop: mix.close_on_rcpt_drop,
    tenant_front_end: mix.tenant_front_end,
  };
}

/**
 * The generated world's front end. No published per-IP figure exists for Exchange Online; on
 * premises Exchange's MaxInboundConnectionPerSource defaults to 20 and Postfix anvil's to 50. 8
 * is breached by a verifier that counts its 2 sessions per MX name across a few tenants at once,
 * and leaves room for one that counts per IP.
 */
const GENERATED_FRONT_END = {
  label: "am6eur05ft001.mail.protection.outlook.test",
  frontEndMaxConnections: 8,
} as const;

/** Applies an overlay to a normal domain already built and populated (addresses: its verified ones). */
function applyOverlay(domain: DomainSpec, kind: Overlay, addresses: readonly string[], rng: Rng): void {
  const verified = addresses.map((a) => a.slice(0, a.lastIndexOf("@")));
  const mailboxes = domain.mailboxes ?? [];
  // Verified mailboxes first, so that the overlay shows in the world's addresses.
  const verifiedMailboxes = verified.filter((l) => mailboxes.includes(l));
  const existing = verifiedMailboxes.length > 0 ? verifiedMailboxes : mailboxes;
  const some = (list: readonly string[], n: number): string[] => {
    const pool = [...list];
    const out: string[] = [];
    while (out.length < n && pool.length > 0) out.push(...pool.splice(rng.int(0, pool.length - 1), 1));
    return out;
  };
  switch (kind) {
    case "sender_block":
      domain.senderBlockedMailboxes = some(existing, rng.int(1, 2));
      domain.senderBlockReply = rng.pick([
        STOCK_REPLIES.mimecastUserEntry,
        STOCK_REPLIES.mimecastUserDomainEntry,
      ]);
      return;
    case "busy_mailbox":
      domain.busyMailboxes = some(existing, rng.int(1, 2));
      return;
    case "close_on_rcpt_421":
    case "close_on_rcpt_drop":
      domain.closeOnRcpt = some(verified, 1).map((local) => ({
        local,
        action: kind === "close_on_rcpt_421" ? "421" : "drop",
      }));
      return;
    case "tenant_front_end":
      domain.hosts = [tenantHost(domain.name, { ...GENERATED_FRONT_END, tenantAttribution: true })];
      return;
  }
}

export function generateMixedWorld(opts: GenerateOptions): GeneratedWorld {
  const rng = new Rng(opts.seed);
  // Its own stream, so that overlays never shift the main stream's draws.
  const overlayRng = new Rng(opts.seed ^ 0x20_20_20_20);
  const mix: Record<Behaviour, number> = { ...DEFAULT_MIX, ...opts.mix };
  const draw = mainDraw(mix);
  const hasOverlays = OVERLAYS.some((o) => mix[o] > 0);
  const shared = sharedHosts();
  const domains: DomainSpec[] = [];
  const addresses: string[] = [];
  for (let i = 0; i < opts.domains; i++) {
    const name = `${rng.pick(WORDS_A)}-${rng.pick(WORDS_B)}${(i + 1).toString()}.test`;
    const behaviour = rng.weighted(draw);
    const domain = makeDomain(name, behaviour, rng, shared);
    const mine = populate(domain, countFor(opts.addressesPerDomain, rng), rng);
    addresses.push(...mine);
    const roleShare = opts.roleAddressShare ?? 0;
    if (roleShare > 0 && domain.hosts && (domain.dns ?? "mx") === "mx" && rng.chance(roleShare)) {
      addresses.push(`postmaster@${name}`);
      if (rng.chance(0.5)) addresses.push(`abuse@${name}`);
    }
    if (behaviour === "normal" && hasOverlays) {
      const chosen = overlayRng.weighted(overlayDraw(mix));
      if (chosen !== "normal") applyOverlay(domain, chosen, mine, overlayRng);
    }
    domains.push(domain);
  }
  const spec: WorldSpec = opts.latencyMs === undefined ? { domains } : { domains, latencyMs: opts.latencyMs };
  return { spec, addresses };
}

// ---------------------------------------------------------------------------------------------
// Multi-tenant front ends.

export interface TenantFrontEndOptions {
  /** How many tenant domains: tenant1.test, tenant2.test, … (see domainPrefix). */
  tenants: number;
  /** Mailboxes of each tenant: user1 … userN. Default 3. */
  mailboxesPerTenant?: number;
  /** The front end's label: its banner and PTR name. Default "am6eur05ft001.mail.protection.outlook.test". */
  label?: string;
  /** Tenant i's domain is `${domainPrefix}${i}.test`, from 1. Default "tenant". */
  domainPrefix?: string;
  /** HostSpec.tenantAttribution. Default true. */
  tenantAttribution?: boolean;
  /** HostSpec.frontEndMaxConnections. Default: no limit. */
  frontEndMaxConnections?: number;
  /** Default "microsoft365". */
  kind?: ServerKind;
  /** HostSpec.latencyMs of the front end. */
  latencyMs?: number;
}

/** A tenant's MX host on a front end: M365's `<domain-with-dashes>.mail.protection.outlook.test`. */
function tenantHost(
  domain: string,
  opts: Pick<
    TenantFrontEndOptions,
    "label" | "tenantAttribution" | "frontEndMaxConnections" | "kind" | "latencyMs"
  >,
): HostSpec {
  const host: HostSpec = {
    name: `${dashed(domain)}.mail.protection.outlook.test`,
    preference: 0,
    kind: opts.kind ?? "microsoft365",
    frontEnd: opts.label ?? GENERATED_FRONT_END.label,
    tenantAttribution: opts.tenantAttribution ?? true,
  };
  if (opts.frontEndMaxConnections !== undefined) host.frontEndMaxConnections = opts.frontEndMaxConnections;
  if (opts.latencyMs !== undefined) host.latencyMs = opts.latencyMs;
  return host;
}

/**
 * N tenant domains on one multi-tenant front end (Exchange Online Protection style): each domain's
 * own MX name, all of them on one IP, one listener and one counters object.
 */
export function tenantFrontEnd(opts: TenantFrontEndOptions): DomainSpec[] {
  const perTenant = opts.mailboxesPerTenant ?? 3;
  const mailboxes = Array.from({ length: perTenant }, (_, i) => `user${(i + 1).toString()}`);
  return Array.from({ length: opts.tenants }, (_, i) => {
    const name = `${opts.domainPrefix ?? "tenant"}${(i + 1).toString()}.test`;
    return { name, hosts: [tenantHost(name, opts)], mailboxes: [...mailboxes] };
  });
}
