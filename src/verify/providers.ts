// Who runs a domain's mail, from MX host names first (stable, published in DNS), then from the
// banner/EHLO text (self-declared, often hidden). Drives server_type and needs_physical_verify.

export type ServerType =
  | "google"
  | "microsoft365"
  | "outlook"
  | "yahoo"
  | "proofpoint"
  | "mimecast"
  | "postfix"
  | "exim"
  | "unknown";

export interface ProviderTraits {
  /**
   * The provider's RCPT answers don't reveal mailbox existence: it (often) accepts every
   * recipient and bounces later. An accept from it is not evidence unless the same session saw
   * it reject something (the random probe, or another address of the domain).
   */
  acceptsAllAtRcpt: boolean;
}

// Microsoft 365 rejects unknown recipients only when the tenant enabled Directory-Based Edge
// Blocking; many hybrid tenants don't and accept everything. Yahoo accepts every recipient of
// yahoo.com at RCPT time and bounces asynchronously. Proofpoint and Mimecast are filtering
// gateways in front of the real server; unless recipient validation is configured they relay
// everything. Google, Outlook.com (consumer) and stock Postfix/Exim reject unknown users.
export const PROVIDER_TRAITS: Readonly<Record<ServerType, ProviderTraits>> = {
  google: { acceptsAllAtRcpt: false },
  microsoft365: { acceptsAllAtRcpt: true },
  outlook: { acceptsAllAtRcpt: false },
  yahoo: { acceptsAllAtRcpt: true },
  proofpoint: { acceptsAllAtRcpt: true },
  mimecast: { acceptsAllAtRcpt: true },
  postfix: { acceptsAllAtRcpt: false },
  exim: { acceptsAllAtRcpt: false },
  unknown: { acceptsAllAtRcpt: false },
};

// Host-name suffixes, most specific first ("olc.protection.outlook.com" before any outlook rule).
const HOST_RULES: readonly [RegExp, ServerType][] = [
  [/(?:^|\.)mail\.protection\.outlook\.com$/, "microsoft365"], // contoso-com.mail.protection.outlook.com
  [/(?:^|\.)olc\.protection\.outlook\.com$/, "outlook"], // hotmail-com.olc.protection.outlook.com
  [/(?:^|\.)(?:google|googlemail)\.com$/, "google"], // aspmx.l.google.com, alt1.aspmx.l.google.com, aspmx2.googlemail.com
  [/(?:^|\.)yahoodns\.net$/, "yahoo"], // mta5.am0.yahoodns.net
  [/(?:^|\.)(?:pphosted\.com|ppe-hosted\.com)$/, "proofpoint"], // mx0a-00123401.pphosted.com, mx1-us1.ppe-hosted.com
  [/(?:^|\.)mimecast\.com$/, "mimecast"], // eu-smtp-inbound-1.mimecast.com
];

// Banner/EHLO wordings, checked when no host name matched.
const TEXT_RULES: readonly [RegExp, ServerType][] = [
  [/\bmx\.google\.com\b|\bgsmtp\b/i, "google"], // "220 mx.google.com ESMTP d9443c01a7336-2...- gsmtp"
  [/\.mail\.protection\.outlook\.com\b/i, "microsoft365"], // "220 BN8NAM12FT063.mail.protection.outlook.com Microsoft ESMTP MAIL Service ready"
  [/\.olc\.protection\.outlook\.com\b/i, "outlook"],
  [/\byahoo(?:dns)?\b/i, "yahoo"], // "220 mtaproxy1.free.mail.ne1.yahoo.com ESMTP ready"
  [/\bpphosted\b|\bproofpoint\b/i, "proofpoint"],
  [/\bmimecast\b/i, "mimecast"], // "220 service-3.mimecast.com ESMTP ..."
  [/\bpostfix\b/i, "postfix"], // "220 mail.example.org ESMTP Postfix (Debian/GNU)"
  [/\bexim\b/i, "exim"], // "220 mx.example.net ESMTP Exim 4.96 Mon, 02 Sep 2024 ..."
];

/** Server type from the MX host names (chosen host first), else the banner and EHLO texts. */
export function detectServerType(hostNames: readonly string[], texts: readonly string[] = []): ServerType {
  for (const host of hostNames) {
    const name = host.toLowerCase().replace(/\.$/, "");
    const hit = HOST_RULES.find(([pattern]) => pattern.test(name));
    if (hit !== undefined) return hit[1];
  }
  for (const text of texts) {
    const hit = TEXT_RULES.find(([pattern]) => pattern.test(text));
    if (hit !== undefined) return hit[1];
  }
  return "unknown";
}

export function providerTraits(type: ServerType): ProviderTraits {
  return PROVIDER_TRAITS[type];
}
