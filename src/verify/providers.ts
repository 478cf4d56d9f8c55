// Who runs a domain's mail, from MX host names first (stable, published in DNS), then from the
// banner/EHLO text (self-declared, often hidden), then from the wording of its MAIL/RCPT replies
// (which MTAs rarely customise). Drives server_type and needs_physical_verify. Also: whether a
// domain is a free mailbox provider (is_free_provider), from its name alone.
import freeProviderList from "email-providers/all.json" with { type: "json" };
import { isDisposableDomain } from "./lists/disposable.ts";

export type ServerType =
  // Mailbox providers
  | "google"
  | "microsoft365"
  | "outlook"
  | "yahoo"
  | "icloud"
  | "zoho"
  | "fastmail"
  | "yandex"
  | "mailru"
  | "gmx"
  | "ionos"
  | "protonmail"
  // Filtering gateways in front of the real server
  | "proofpoint"
  | "mimecast"
  | "barracuda"
  | "ironport"
  // Server software
  | "exchange"
  | "postfix"
  | "exim"
  | "opensmtpd"
  | "sendmail"
  | "qmail"
  | "unknown";

export interface ProviderTraits {
  /**
   * The provider's RCPT answers don't reveal mailbox existence: it (often) accepts every
   * recipient and bounces later. An accept from it is not evidence unless the same session saw
   * it reject something (the random probe, or another address of the domain).
   */
  acceptsAllAtRcpt: boolean;
}

// true, with the evidence:
// - microsoft365: rejects unknown recipients only when the tenant enabled Directory-Based Edge
//   Blocking; many hybrid tenants don't and accept everything.
// - yahoo (and AOL, on the same platform): accepts every recipient at RCPT and bounces later.
// - proofpoint, mimecast, ironport: filtering gateways; unless recipient validation (an LDAP
//   accept query, a synced directory) is configured they accept whatever their domain table allows.
// - exchange (on-premises): Set-RecipientFilterConfig -RecipientValidationEnabled is $false by
//   default: Exchange accepts unknown recipients in the session and sends an NDR afterwards
//   (Hornetsecurity "About the Recipient Validation"; exchangetoolkit.com "Recipient Filter").
//   Only with it enabled does RCPT get "550 5.1.10 RESOLVER.ADR.RecipientNotFound" — the catch-all
//   probe tells the two apart, this flag only decides what an unanswered probe means.
// - qmail: stock qmail-smtpd checks only rcpthosts and bounces unknown local users later from
//   qmail-lspawn (qmail-ldap's RCPTCHECK exists to change exactly that; default off).
// false: Google, Outlook.com, iCloud, Zoho, Fastmail, Yandex, Mail.ru, GMX/web.de, IONOS and
// Proton reject unknown users at RCPT; so do stock Postfix, Exim, OpenSMTPD ("550 Invalid
// recipient") and Sendmail ("550 5.1.1 … User unknown"). Barracuda's Email Security Service is a
// pass-through that asks the destination server about each RCPT before answering (Barracuda
// Campus "How the Service Works"), so its answer is the downstream server's.
export const PROVIDER_TRAITS: Readonly<Record<ServerType, ProviderTraits>> = {
  google: { acceptsAllAtRcpt: false },
  microsoft365: { acceptsAllAtRcpt: true },
  outlook: { acceptsAllAtRcpt: false },
  yahoo: { acceptsAllAtRcpt: true },
  icloud: { acceptsAllAtRcpt: false },
  zoho: { acceptsAllAtRcpt: false },
  fastmail: { acceptsAllAtRcpt: false },
  yandex: { acceptsAllAtRcpt: false },
  mailru: { acceptsAllAtRcpt: false },
  gmx: { acceptsAllAtRcpt: false },
  ionos: { acceptsAllAtRcpt: false },
  protonmail: { acceptsAllAtRcpt: false },
  proofpoint: { acceptsAllAtRcpt: true },
  mimecast: { acceptsAllAtRcpt: true },
  barracuda: { acceptsAllAtRcpt: false },
  ironport: { acceptsAllAtRcpt: true },
  exchange: { acceptsAllAtRcpt: true },
  postfix: { acceptsAllAtRcpt: false },
  exim: { acceptsAllAtRcpt: false },
  opensmtpd: { acceptsAllAtRcpt: false },
  sendmail: { acceptsAllAtRcpt: false },
  qmail: { acceptsAllAtRcpt: true },
  unknown: { acceptsAllAtRcpt: false },
};

// Host-name suffixes, most specific first ("olc.protection.outlook.com" before any outlook rule).
// Every pattern is anchored at a label boundary and the end: "google.com.evil.example" is nobody.
const HOST_RULES: readonly [RegExp, ServerType][] = [
  // contoso-com.mail.protection.outlook.com; GCC High / 21Vianet variants
  [/(?:^|\.)mail\.protection\.(?:outlook\.com|office365\.us|partner\.outlook\.cn)$/, "microsoft365"],
  [/(?:^|\.)[a-z]-v1\.mx\.microsoft$/, "microsoft365"], // contoso-com.p-v1.mx.microsoft (DNSSEC/DANE endpoint)
  [/(?:^|\.)olc\.protection\.outlook\.com$/, "outlook"], // hotmail-com.olc.protection.outlook.com, eur.olc.protection.outlook.com
  [/(?:^|\.)hotmail\.com$/, "outlook"], // mx1.hotmail.com (older records)
  [/(?:^|\.)(?:google|googlemail)\.com$/, "google"], // aspmx.l.google.com, smtp.google.com, aspmx2.googlemail.com
  [/(?:^|\.)yahoodns\.net$/, "yahoo"], // mta5.am0.yahoodns.net; AOL: mx-aol.mail.gm0.yahoodns.net
  [/(?:^|\.)mx\.aol\.com$/, "yahoo"], // mailin-03.mx.aol.com (AOL before it moved onto Yahoo's MX)
  [/(?:^|\.)mail\.icloud\.com$/, "icloud"], // mx01.mail.icloud.com, mx02.mail.icloud.com
  [/(?:^|\.)zoho(?:mail)?\.(?:com|eu|in|jp|sa|com\.au|com\.cn)$|(?:^|\.)zohocloud\.ca$/, "zoho"], // mx.zoho.com, mx2.zoho.eu
  [/(?:^|\.)messagingengine\.com$/, "fastmail"], // in1-smtp.messagingengine.com
  [/(?:^|\.)yandex\.(?:net|ru|com)$/, "yandex"], // mx.yandex.net, mx.yandex.ru
  [/(?:^|\.)mail\.ru$/, "mailru"], // mxs.mail.ru, emx.mail.ru (VK WorkMail)
  [/(?:^|\.)(?:gmx\.(?:net|com|de)|web\.de|mail\.com)$/, "gmx"], // mx00.gmx.net, mx01.emig.gmx.net, mx-ha03.web.de, mx00.mail.com
  // mx00.kundenserver.de, mx00.ionos.de / .co.uk / .es, mx00.1and1.co.uk, mx01.perfora.net
  [
    /(?:^|\.)(?:kundenserver\.de|perfora\.net|(?:ionos|1and1)\.(?:de|com|co\.uk|es|fr|it|mx|at|ca))$/,
    "ionos",
  ],
  [/(?:^|\.)proton(?:mail)?\.(?:ch|me)$/, "protonmail"], // mail.protonmail.ch, mailsec.protonmail.ch
  [/(?:^|\.)(?:pphosted\.com|ppe-hosted\.com)$/, "proofpoint"], // mx0a-00123401.pphosted.com, mx1-us1.ppe-hosted.com
  [/(?:^|\.)mimecast(?:-offshore)?\.com$/, "mimecast"], // eu-smtp-inbound-1.mimecast.com, us-smtp-inbound-1.mimecast.com
  [/(?:^|\.)(?:barracudanetworks\.com|cudasvc\.com)$/, "barracuda"], // d40321a.ess.barracudanetworks.com
  [/(?:^|\.)iphmx\.com$/, "ironport"], // esa1.hgst.iphmx.com, esa3.hc3370-68.iphmx.com (Cisco Secure Email Cloud Gateway)
];

// Banner/EHLO wordings, checked when no host name matched. Provider names before software names:
// Proton's front ends say "ESMTP Postfix", and so do many hosts of smaller providers.
const TEXT_RULES: readonly [RegExp, ServerType][] = [
  [/\bmx\.google\.com\b|\bgsmtp\b/i, "google"], // "220 mx.google.com ESMTP d9443c01a7336-2...- gsmtp"
  [/\.mail\.protection\.outlook\.com\b/i, "microsoft365"], // "220 BN8NAM12FT063.mail.protection.outlook.com Microsoft ESMTP MAIL Service ready"
  [/\.olc\.protection\.outlook\.com\b/i, "outlook"],
  [/\byahoo(?:dns)?\b/i, "yahoo"], // "220 mtaproxy1.free.mail.ne1.yahoo.com ESMTP ready"
  [/\biscream\b|\bicloud\.com\b/i, "icloud"], // "220 iCloud iscream SMTP proxy - p00-iscream-smtp-d759469dd-ss5bd 3.5.0 (…)"
  [/\bzoho(?:mail)?\.(?:com|eu|in)\b/i, "zoho"], // "220 mx.zoho.com ESMTP ready"
  [/\bmessagingengine\.com\b/i, "fastmail"], // "220 mail.messagingengine.com ESMTP ready"
  [/\byandex\b/i, "yandex"], // "220 mxfront….mail.yandex.net (Want to use Yandex.Mail for your domain? …)"
  [/\bmail\.ru\b/i, "mailru"], // "220 mxs.mail.ru ESMTP ready"
  // 1&1's "Nemesis" front end serves GMX, web.de, mail.com and IONOS alike; the host names it
  // greets with tell them apart: "220 kundenserver.de (mreue106) Nemesis ESMTP Service ready".
  [/\b(?:kundenserver\.de|perfora\.net|ionos|1and1)\b[^\n]*\bNemesis\b/i, "ionos"],
  [/\bNemesis ESMTP\b/i, "gmx"], // "220 gmx.com (mrgmx003) Nemesis ESMTP Service ready", "554-web.de (mxweb005) Nemesis ESMTP Service not available"
  [/\bproton(?:mail)?\.(?:ch|me)\b/i, "protonmail"], // "220-mailinosl111.protonmail.ch ESMTP Postfix"
  [/\bpphosted\b|\bproofpoint\b|\bESMTP (?:mfa|cm)-m\d+\b/i, "proofpoint"], // "220 mx0b-00000d03.pphosted.com ESMTP mfa-m0214089"
  [/\bmimecast\b/i, "mimecast"], // "220 service-3.mimecast.com ESMTP ..."
  [/\bbarracuda\b/i, "barracuda"],
  [/\bironport\b|\biphmx\b/i, "ironport"],
  // On-premises Exchange, after the Microsoft 365 rule (whose banner says the same):
  // "220 mail1.fabrikam.com Microsoft ESMTP MAIL Service ready at Fri, 5 Aug 2016 16:24:41 -0700"
  [/\bMicrosoft ESMTP MAIL Service\b/i, "exchange"],
  [/\bOpenSMTPD\b/i, "opensmtpd"], // smtp_session.c: "220 %s ESMTP %s" with SMTPD_NAME "OpenSMTPD"
  [/\bpostfix\b/i, "postfix"], // "220 mail.example.org ESMTP Postfix (Debian/GNU)"
  [/\bexim\b/i, "exim"], // "220 mx.example.net ESMTP Exim 4.96 Mon, 02 Sep 2024 ..."
  [/\bsendmail\b/i, "sendmail"], // "220 mail.example.com ESMTP Sendmail 8.15.2/8.15.2; Mon, 2 Sep 2024 …"
  [/\bqmail\b/i, "qmail"], // "220 mail.example.com - Welcome to Qmail Toaster … ESMTP"
];

// MAIL/RCPT reply wordings that only one MTA uses, for servers whose banner names nobody.
const REPLY_RULES: readonly [RegExp, ServerType][] = [
  // "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup"
  // (Microsoft 365 says it too, but its MX names are caught above).
  [/\bRESOLVER\.ADR\.Recip(?:ient)?NotFound\b/i, "exchange"],
  // "550 5.1.1 <bob@example.com>: Recipient address rejected: User unknown in local recipient table"
  [/\bUser unknown in (?:local recipient|virtual mailbox|virtual alias|relay recipient) table\b/i, "postfix"],
  [/\bUnrouteable address\b/i, "exim"], // "550 Unrouteable address"
  // AsyncOS (Cisco Secure Email / IronPort) refusing a recipient its LDAP accept query doesn't know
  [/^#5\.1\.0 Address rejected\b/, "ironport"], // "550 #5.1.0 Address rejected."
  // smtp_session.c: "250 2.1.5 Destination address valid: Recipient ok"; lka_session.c: "550 Invalid recipient: <a@b>"
  [/\bDestination address valid: Recipient ok\b|\bInvalid recipient: </i, "opensmtpd"],
  [/\.\.\. (?:Recipient|Sender) ok\b|\.\.\. User unknown\b/i, "sendmail"], // "250 2.1.5 <bob@example.com>... Recipient ok"
  // qmail-smtpd ends its replies with the status in "(#x.y.z)": "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)"
  [/\(#[245]\.\d{1,3}\.\d{1,3}\b[^)]*\)/, "qmail"],
];

// A reply echoes the addresses we sent ("<bob@zoho-fans.example>: Recipient address rejected"):
// they name the recipient's domain, not the server, so they are blanked before matching.
const scrubAddresses = (text: string): string =>
  text.replace(/<[^<>]*>/g, "<>").replace(/[^\s<>]+@[^\s<>]+/g, "");

/**
 * Server type from the MX host names (chosen host first), else the banner and EHLO texts, else
 * the MAIL/RCPT reply texts of the session (optional; addresses in them are ignored).
 */
export function detectServerType(
  hostNames: readonly string[],
  texts: readonly string[] = [],
  replyTexts: readonly string[] = [],
): ServerType {
  for (const host of hostNames) {
    const name = host.toLowerCase().replace(/\.$/, "");
    const hit = HOST_RULES.find(([pattern]) => pattern.test(name));
    if (hit !== undefined) return hit[1];
  }
  for (const text of texts) {
    const hit = TEXT_RULES.find(([pattern]) => pattern.test(text));
    if (hit !== undefined) return hit[1];
  }
  const replyRules = [...TEXT_RULES, ...REPLY_RULES];
  for (const text of replyTexts) {
    const scrubbed = scrubAddresses(text);
    const hit = replyRules.find(([pattern]) => pattern.test(scrubbed));
    if (hit !== undefined) return hit[1];
  }
  return "unknown";
}

export function providerTraits(type: ServerType): ProviderTraits {
  return PROVIDER_TRAITS[type];
}

// The RFC 2606 example domains are on the list (people type them into sign-up forms) but are
// reserved names nobody hands out mailboxes on.
const RESERVED_EXAMPLES = new Set(["example.com", "example.net", "example.org"]);

let freeProviders: ReadonlySet<string> | null = null;

/**
 * True when the domain is a free (consumer) mailbox provider: gmail.com, outlook.com, yahoo.com,
 * gmx.de, … From `email-providers` (derhuerst/email-providers, ~8,700 domains, a list shipped in
 * the package: nothing is fetched at install or run time). Exact names only: a company's
 * "mail.example.org" is not free because its parent is listed. A domain on the disposable list
 * is disposable, not free: about 3,000 of the list's names are (10minutemail.com, and typo
 * catchers such as gmial.com), and a throw-away inbox is not a provider's customer.
 */
export function isFreeProviderDomain(domain: string): boolean {
  freeProviders ??= new Set(
    (freeProviderList as readonly string[])
      .map((d) => d.trim().toLowerCase())
      .filter((d) => !RESERVED_EXAMPLES.has(d)),
  );
  const name = domain.trim().toLowerCase().replace(/\.$/, "");
  return freeProviders.has(name) && !isDisposableDomain(name);
}
