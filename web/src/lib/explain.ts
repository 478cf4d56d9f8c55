// What each verification result says, in words for the person reading the result card. One
// table per field, so the card, the task page and the jobs table all say the same thing.

export const RESULT_STATUSES = [
  "valid",
  "invalid",
  "catchall",
  "invalid_syntax",
  "disposable_domain",
  "unknown",
] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];

export const STATUS_LABEL: Record<ResultStatus, string> = {
  valid: "Valid",
  invalid: "Invalid",
  catchall: "Catch-all",
  invalid_syntax: "Invalid syntax",
  disposable_domain: "Disposable",
  unknown: "Unknown",
};

export const STATUS_MEANING: Record<ResultStatus, string> = {
  valid: "The mail server accepted this mailbox: mail sent to it should be delivered.",
  invalid:
    "The mailbox does not exist, or the domain receives no mail at all: a message sent to it would bounce. Remove it from your list.",
  catchall:
    "The domain accepts every address, even made-up ones, so its server cannot tell us whether this mailbox exists. Mail may be delivered or may bounce later: treat it as risky.",
  invalid_syntax:
    "The address breaks the rules of email syntax (RFC 5321), so it cannot receive mail. Check it for typos.",
  disposable_domain:
    "The domain hands out throwaway addresses (a disposable-email service). The mailbox may work today but is usually abandoned soon.",
  unknown:
    "No verdict could be reached (the reason below says why). Unknown results cost no credits; trying again later often settles them.",
};

/** Why a result is `unknown` (src/verify/types.ts UNKNOWN_REASONS), in words. */
export const UNKNOWN_REASON_MEANING: Record<string, string> = {
  greylisted:
    "The mail server asked us to come back later (greylisting), a common anti-spam delay. A later retry usually settles it.",
  smtp_timeout: "The mail server did not answer in time.",
  connection_failed: "No connection to the domain's mail server could be made.",
  connection_dropped: "The mail server closed the connection before answering.",
  ip_blocklisted:
    "The mail server refused to talk to this service's IP address (a blocklist), so it said nothing about the mailbox.",
  policy_rejection:
    "The mail server refused our check for a policy reason that does not concern the mailbox.",
  recipient_blocks_sender:
    "The recipient has blocked the sender address this service checks with (a personal block list). That points to a mailbox that exists, so it is not called invalid, but the server would not confirm it; retrying will not change it.",
  rate_limited: "The mail server asked us to slow down before it would answer.",
  temporary_failure: "The mail server reported a temporary problem.",
  dns_timeout: "The domain's DNS did not answer in time.",
  dns_error: "The domain's DNS answered with an error.",
  port25_blocked:
    "This server cannot open outgoing connections on port 25 (many cloud networks block it); ask the operator to set SMTP_PROXY.",
  proxy_error: "The SOCKS proxy used to reach mail servers failed.",
  smtp_protocol_error: "The mail server answered in a way that does not follow the SMTP protocol.",
  unclassified_rejection:
    "The mail server refused the address with a message we could not interpret with confidence, so we do not call it invalid.",
  timeout_dns: "The verification ran out of time while looking up the domain.",
  timeout_smtp: "The verification ran out of time while talking to the mail server.",
  cancelled: "The verification was interrupted (the server was shutting down).",
  address_literal: "The address names an IP address instead of a domain; such addresses are never probed.",
  private_host_refused:
    "The domain's mail servers are on private or reserved networks, which this service does not connect to.",
};

export const FIELD_MEANING = {
  is_catchall:
    "Whether the domain accepts mail for any address at all. When it does, an accepted mailbox proves nothing.",
  needs_physical_verify:
    "This mail provider's answers do not reveal whether a mailbox exists (e.g. it accepts everything and bounces later). Only sending a real message would tell.",
  is_role_based: "A shared role mailbox (info@, support@, sales@…) rather than a person.",
  is_disposable: "The domain is a known disposable-email service.",
  has_mx_records: "The domain publishes mail servers (MX records) in DNS.",
  has_reverse_dns: "The mail server's IP address has a reverse DNS name, as well-run servers do.",
  host_name: "The mail server that was asked.",
  server_type: "The kind of mail server or provider, recognised from its answers.",
  domain_name: "The domain of the address.",
  is_free_provider:
    "The domain is a free consumer mailbox provider (Gmail, Outlook, Yahoo…), not a company's own.",
  validated_at: "When the check finished.",
} as const;

export const isResultStatus = (s: string): s is ResultStatus =>
  (RESULT_STATUSES as readonly string[]).includes(s);

export const statusLabel = (s: string): string => (isResultStatus(s) ? STATUS_LABEL[s] : s);
