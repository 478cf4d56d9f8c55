// The RCPT reply classifier: a table of rules, first match wins, each with the real reply that
// justified it. Principle: `mailbox_missing`/`mailbox_disabled` (→ invalid) need positive
// evidence about the mailbox; anything that blames us (our IP, our sender, our rate), every
// 4xx and every unrecognised 5xx stays `unknown`. Calling a real mailbox invalid is the
// costliest error this product can make, so sender-blaming rules run before mailbox rules, and
// a reply that says both "missing" and "exists" (full) is never a verdict about the mailbox.
//
// Order: accepted → 4xx → 5xx that blame us (IP, then the recipient's own block of our sender,
// rate, policy, sender) → 5xx that are not about the mailbox after all (temporary states,
// protocol) → contradictions between code and wording → mailbox codes and wording →
// `perm_unclassified` LAST. The engine decides an "unclassified_rejection" with evidence from
// the same server (evidence.ts), so only replies that may be about the mailbox may end there;
// anything ambiguous by its own words must not.
//
// Sources are cited per rule: the provider's published error reference, sisimai's reason and
// Rhost tables (libsisimai.org, harvested from real bounces), bounce-classifier and log-parser
// projects' tables of real replies, and MTA sources/docs. The fixture table in
// test/fixtures/smtp-replies.ts holds the full replies with their source.
import type { UnknownReason } from "../types.ts";
import type { SmtpReply } from "./reply-reader.ts";

export type ReplyVerdict =
  | { kind: "accepted" }
  | { kind: "mailbox_missing" }
  | { kind: "mailbox_disabled" }
  | { kind: "mailbox_full" }
  | { kind: "unknown"; reason: UnknownReason };

interface Rule {
  /** Stable name, for tests and debugging. */
  name: string;
  matches: (r: SmtpReply) => boolean;
  verdict: ReplyVerdict;
}

const unknown = (reason: UnknownReason): ReplyVerdict => ({ kind: "unknown", reason });
const MISSING: ReplyVerdict = { kind: "mailbox_missing" };
const DISABLED: ReplyVerdict = { kind: "mailbox_disabled" };
const FULL: ReplyVerdict = { kind: "mailbox_full" };

const isTemp = (r: SmtpReply): boolean => r.code >= 400 && r.code < 500;
const isPerm = (r: SmtpReply): boolean => r.code >= 500 && r.code < 600;
const enhancedIs = (r: SmtpReply, pattern: RegExp): boolean =>
  r.enhanced !== null && pattern.test(r.enhanced);

/**
 * One case-insensitive regex from groups of alternatives (one group per meaning, so each stays
 * readable). Every quantifier below is bounded or follows a literal, so matching stays linear
 * in the reply length (see the 4 KB adversarial test).
 */
const anyOf = (...groups: string[]): RegExp => new RegExp(groups.join("|"), "i");

// Our sending IP, host or network is listed, unknown or unwelcome. Any code, any enhanced code.
const BLOCKLIST_TEXT = anyOf(
  // Named lists: "blocked using zen.spamhaus.org", "Customer Block list (AS16012607)", "DNSBL:RBL 521< ip >_is_blocked" (AT&T)
  String.raw`spamhaus|spamcop|barracuda|sorbs|\bdnsbl\b|\brbl\b|block ?list|black ?list|blocked using|\blisted\b.{0,30}\b(?:dnsbl|rbl|spam)`,
  // Reputation: "poor reputation" (sisimai BadReputation), "554 IP=… - None/bad reputation" (T-Online), "very low reputation of the sending IP" (Gmail)
  String.raw`\breputation\b`,
  // Our IP or host named: "Client host rejected", "Client host blocked for spamming issues" (Orange), "Your IP has no Reverse DNS",
  // "554 IP=203.0.113.9 - A problem occurred … (BL)" (T-Online), "Access from ip address 192.0.2.1 blocked." (sisimai Blocked),
  // "Too much Spam from this IP" (Tiscali), "Adresse IP source bloquee pour incident de spam" (Orange)
  String.raw`client host (?:rejected|blocked)|\byour (?:ip|ip address|host|hostname|network|server)\b|\bip=\s?[0-9a-f.:]+\s-|\bip(?: address)? \[?[0-9a-f.:]{7,}\]? (?:is |has been )?(?:blocked|black ?listed|block ?listed|banned|rejected|refused|not allowed)|\bfrom this ip\b|adresse ip source bloqu`,
  // Bans and IP-level refusals: "Access denied, banned sending IP" (Microsoft; "banned recipient" is not about us),
  // "unusual rate of unsolicited mail originating from your IP" (Gmail), "Service refuse … Service refused, please try later" (Orange/La Poste, sisimai Blocked)
  // "553 5.7.2 [TSS09] All messages from 203.0.113.9 will be permanently deferred; Retrying will NOT succeed" (Yahoo)
  String.raw`\bbanned\b(?! recipient)|unsolicited mail|service refus|messages from \S{1,64} will be permanently deferred`,
  // Reverse DNS / PTR of our IP: "cannot find your reverse hostname" (Postfix), "does not have a PTR record" (Gmail), "No RDNS entry"
  String.raw`reverse (?:hostname|dns|lookup|name)|\bptr\b|\brdns\b`,
);
const GREYLIST_TEXT = /gr[ae]y-?list/i;
// Rate / volume / connection limits. "too many recipients" is deliberately absent: it is the
// session's chunking signal (see chunking.ts), not a verdict.
const RATE_TEXT = anyOf(
  // "421 4.7.0 Too many connections", "Trop de connexions … Too many connections, slow down" (Orange), "Error: too many errors" (SFR),
  // "Too many invalid recipients from this IP" (Tiscali), "554 Too many unknown RCPT TO addresses from host" (Alice)
  // "450 4.7.1 Error: too many recipients from 203.0.113.9" (Postfix smtpd_client_recipient_rate_limit: per client,
  // across connections — not the per-transaction "452 4.5.3 Error: too many recipients", which chunking.ts handles)
  String.raw`too many recipients from|rate limit|\bthrottl|too many (?:connections|concurrent|sessions|errors|invalid|unknown)|too many messages(?! (?:on|in) (?:the|this) (?:server|mailbox))|maximum number of connections|max message per connection|trop de connexions`,
  // "receiving mail at a rate that prevents…" / "receiving mail too quickly" (Gmail 450 4.2.1 and 550 5.2.1 ReceivingRatePerm, Yahoo),
  // "deferred due to excessive volume" (iCloud), "[TSS04] … unexpected volume" (Yahoo), "Please try again slower" (sisimai Speeding)
  String.raw`receiving mail (?:at a rate|too quickly)|unexpected volume|excessive volume|\bTSS0\d|slow down|try again slower|frequency (?:is )?limited`,
  // Quotas on the sender or on receiving per hour, not storage: "550 5.2.121 Recipient's per hour message receive limit…",
  // "5.2.122 … messages they can receive per hour" (Exchange Online), "5.2.2 … SubmissionQuotaExceeded" (Exchange), "5.4.5 Daily user sending limit exceeded" (Google)
  String.raw`exceeded (?:the )?(?:\S+ )?(?:rate|connection limit|message limit)|receive (?:limit|per hour)|submission ?quota|sending (?:quota|limit)`,
);
const POLICY_TEXT = anyOf(
  // Relaying: "Relay access denied" (Postfix), "550 relay not permitted" (Exim), "Unable to relay" (Exchange),
  // "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)" (qmail)
  String.raw`relay(?:ing)? (?:access )?(?:denied|not permitted|prohibited|not allowed)|(?:unable to|we do not|not configured to) relay|relay of mail is not allowed|rcpthosts`,
  // Authentication / TLS: "530 5.7.0 Authentication required", "Authentification requise. Authentication Required." (La Poste),
  // "the sender is unauthenticated" (Gmail/Yahoo), "Must issue a STARTTLS command first" (Gmail)
  String.raw`authentication required|\bauth(?:entication)? (?:is )?required|not authenticated|unauthenticated|must issue a starttls|starttls is required`,
  // Our sender or HELO: "Sender address rejected" (Postfix), "Sender verify failed" (Exim), "Emetteur invalide. Invalid Sender." (Orange),
  // "550-Bad HELO: … does not exist" (mis-read as a missing mailbox without this), "Helo command rejected: Host not found",
  // "Rejected by header based Blocked Senders: x - https://community.mimecast.com/docs/DOC-1369#" (Mimecast, the
  // administrator's Blocked Senders policy; wordtothewise.com; the personal "manually Blocked Senders" is matched earlier)
  String.raw`\bsender\b|\bmail from\b|\bemetteur\b|\bhelo\b|\behlo\b|\bblocked senders\b`,
  // Sender authentication: "SPF: … is not allowed to send mail" (La Poste), "Email rejected per DMARC policy" (Zoho)
  String.raw`\bspf\b|\bdmarc\b|\bdkim\b`,
  // Policy wording: "Email not accepted for policy reasons" (Yahoo), "Message rejected due to local policy" (iCloud),
  // "Administrative prohibition" (Exim), "Access denied", "Not allowed to send from that country"
  String.raw`\bpolic(?:y|ies)\b|access denied|administrative(?:ly)? prohibit|\bprohibited\b|not authori[sz]ed|not permitted|not allowed|\bforbidden\b`,
  // Content / spam: "550 spam detected" (Free), "spam message rejected" (Mail.ru), "content filter agent quarantined this message" (Exchange 5.2.1),
  // "521 5.2.1 : AOL will not accept delivery of this message" (a 5.2.1 that is not about the mailbox)
  String.raw`\bspam\b|\bjunk\b|\bvirus\b|content filter|quarantin|bulk mail|not accept (?:delivery of )?this message`,
  // The recipient's domain or server refuses us (a per-recipient block is RECIPIENT_BLOCKS_SENDER_TEXT, tried first):
  // "541 5.4.1 Mail rejected by destination domain" (Zoho), "rejected by the recipient domain" (Gmail bounces, sisimai
  // Lhost Gmail); "only accepting mail from
  // specific email addresses". "recipient refuses to accept your mail" stays here: sisimai files it under UserUnknown, so
  // its one real source does not say the recipient refuses our sender, and it is no mailbox verdict by its own words.
  String.raw`(?:blocked|rejected|denied|refused) by (?:the )?(?:recipient|receiver|destination domain)|refuses to accept your mail|only accept(?:s|ing)? mail from`,
  // Italian certified mail (PEC): "Indirizzo destinatario sconosciuto o non abilitato alla ricezione di posta non certificata"
  // — the PEC box exists and refuses uncertified mail; "sconosciuto o" makes the wording say nothing about existence.
  String.raw`non abilitato alla ricezione|posta non certificata`,
);
// The recipient refuses our sender: a personal block list or the recipient's own filter. Its owner
// keeps the list, so the mailbox exists: never invalid, and not "unclassified" either, or evidence
// could call it missing. Mimecast's User Entry is the case that made this a reason of its own.
const RECIPIENT_BLOCKS_SENDER_TEXT = anyOf(
  // Mimecast SMTP error codes ("A personal block policy is in place for the email address/domain", as tabled by sisimai
  // Rhost Mimecast): "550 Envelope blocked - User Entry - https://community.mimecast.com/docs/DOC-1369#550 [gz1V….au11]"
  // (openaustralia/planningalerts#1969), "Envelope blocked - User Domain Entry", "550 Rejected by header based manually
  // Blocked Senders: x - …" (ActiveCampaign smtp-field-manual; wordtothewise.com "Who are Mimecast?")
  String.raw`envelope blocked - user (?:domain )?entry|manually blocked senders`,
  // "You have been blocked by the recipient" (sisimai Filtered); "550 Mail is rejected by recipients" (QQ: "you are on this
  // recipient's personal blacklist", smtp.codes/qq; sisimai Rhost Tencent, service.mail.qq.com/detail/122/92).
  // Not "rejected by the recipient domain" or "… recipient's server": the domain refusing us is policy.
  String.raw`(?:blocked|rejected|denied|refused) by (?:the )?(?:recipients?|receiver)(?![\w'’-]| domain)`,
  // "550 5.7.1 Recipient doesn't want your mail" (Interia help: "has probably added you to a blocked list");
  // "550 5.7.1 RDENY 203.0.113.9: The receiver denied your mail. Please contact the receiver with another way." (log parser)
  String.raw`(?:does ?n[o']t|don'?t|do'?nt) want your (?:e-?)?mail|receiver denied`,
  // "550 5.1.1 RCP-P2 http://postmaster.facebook.com/response_codes?ip=192.0.2.135#rcp Refused due to recipient preferences"
  // (Facebook, sisimai Filtered and its set-of-emails): a 5.1.1 that is not a missing mailbox.
  String.raw`refused due to recipient preferences`,
);
// A state the reply itself calls temporary, whatever the code: "Recipient Rejected: Temporarily inactive" (sisimai Suspend),
// "User … temporary locked. Please try again later!" (sisimai Suspend), "Account temporarily unavailable".
const TEMP_STATE_TEXT =
  /\btemporar(?:il)?y (?:inactive|locked|disabled|suspended|unavailable|offline|blocked|closed|frozen|deactivated)\b/i;
// Complaints about our command syntax or the conversation: "550 Protocol violation", "550 <x>: Syntax error in parameters or arguments" (GMX).
const PROTOCOL_TEXT = /syntax error|protocol violation|bad sequence of commands/i;

const MISSING_TEXT = anyOf(
  // "No Such User Here" (cPanel Exim), "550 No such recipient here", "550 5.2.0 No such mailbox", "No such person at this address"
  String.raw`no such (?:user|mailbox|recipient|address|account|person|e-?mail address)`,
  // "User unknown" (Sendmail, Postfix …), "User is unknown" (GMX), "user not found", "User does not exist - <x>" (Zoho),
  // "Recipient rejected: User x not found", "550 Unknown user" (Exim), "Unknown local part x in <x>" (web.de),
  // "unknown or illegal alias" (iCloud), "Unknown destination address", "Mail Refused - Address <x> Recipient Unknown"
  String.raw`user(?:name)? (?:is )?(?:unknown|not found|not known|does ?n[o']t exist|not exist)|\buser \S{1,254} (?:was )?not found|unknown (?:user|recipient|mailbox|local[- ]?part|e-?mail address|destination address|or illegal alias)|recipient (?:is )?(?:unknown|not found|does ?n[o']t exist|not exist)`,
  // "552 1 Requested mail action aborted, mailbox not found" (Yahoo), "550 MAILBOX NOT FOUND" (AOL), "Mailbox does not exist.",
  // "mailbox invalid" (Yahoo), "no mailbox by that name is currently available", "sorry, no mailbox here by that name (#5.1.1)" (qmail),
  // "No account by that name here", "Sorry, no user here by that name"
  String.raw`mailbox (?:is )?(?:not found|does ?n[o']t exist|unknown|not exist|invalid|not present)|no mailbox found|no mail ?box available|no (?:mailbox|account|user) (?:here )?by that name|there is no one at this address`,
  // "does not exist" (generic), "553 <x> address unknown.", "550 Address unknown", "recipient e-mail adress unknown" (Strato),
  // "Email address could not be found, or was misspelled"
  String.raw`does ?n[o']t exist|\bad{1,2}ress (?:is )?(?:not found|unknown|not present in directory|(?:could ?n[o']t|cannot) be found)`,
  // "Invalid Recipient - https://community.mimecast.com/…" (Mimecast), "invalid mailbox" (Mail.ru), "550 x: invalid address",
  // "553 Invalid user", "is not a valid mailbox", "is not a known user", "550 can't accept user... (#5.7.1)" (InfoSphere, sisimai UserUnknown)
  String.raw`invalid (?:recipient|mailbox|address|user)|not a valid (?:mailbox|recipient|user|address)|is not a known user|can'?t accept user`,
  // "This user doesn't have a yahoo.com account" (Yahoo), "RESOLVER.ADR.RecipNotFound" (Exchange), "Not our Customer" (Comcast),
  // "User x not listed in Domino Directory" (Domino), "unrecognized recipient"
  String.raw`does ?n[o']t have an? \S+ (?:e-?mail ?)?account|account (?:does ?n[o']t exist|not found|unknown)|RecipNotFound|RecipientNotFound|unrecognized recipient|not our customer|not listed in (?:the )?(?:public )?(?:name & address book|domino directory)`,
  // French: "Adresse d au moins un destinataire invalide" (Orange OFR_416), "Adresse destinataire invalide" (La Poste LPN007_416),
  // "utilisateur inconnu !" (sisimai UserUnknown). German: "550 Benutzer nicht bekannt/User unknown" (web.de).
  String.raw`destinataire invalide|utilisateur inconnu|benutzer nicht bekannt`,
  // Italian: "Siamo spiacenti, non esiste nessun utente con questo nome", "550 Questo indirizzo non esiste", "550 <x>, destin. sconosciuto",
  // "nessun utente simile in questo indirizzo" (sisimai). Spanish: "no existe dicha persona", "no existe ese usuario" (sisimai).
  // Polish: "Account not found / Nie ma takiego konta" (Interia), "Podane konto nie istnieje / No mailbox here by that name" (o2/WP).
  String.raw`non esiste nessun utente|nessun utente simile|questo indirizzo non esiste|destin\. sconosciuto|no existe (?:dicha persona|ese usuario)|nie ma takiego konta|konto nie istnieje`,
);
const DISABLED_TEXT = anyOf(
  // A state of the account: "Account disabled", "The email account that you tried to reach is disabled/inactive" (Gmail),
  // "User is inactive" (GMX), "Recipient address rejected: Account Closed" (Lycos), "user is terminated" (Mail.ru), "Mailbox is frozen",
  // "Account has been disabled or discontinued" (Yahoo), "Recipient suspend the service" (sisimai), "user suspended" (163.com),
  // "Boite du destinataire archivee" (La Poste LPN007_420), "konto jest zablokowane administracyjnie lub nieaktywne" (o2/WP)
  String.raw`\b(?:account|mailbox|user|address|recipient|boite|konto)\b.{0,30}\b(?:disabled|deactivated|suspend(?:ed)?|inactive|closed|terminated|locked|frozen|expired|archived|archivee|discontinued|deleted|zablokowane|nieaktywne)\b`,
  // "Account blocked due to inactivity", "Le compte du destinataire est bloque. The recipient account isblocked." (La Poste LPN007_426)
  // — "blocked" only right after the account: "the recipient has blocked you" is a refusal of us (policy), not a closed account.
  String.raw`\b(?:account|mailbox) (?:is |has been )?blocked\b|\bcompte\b.{0,30}\bbloque\b`,
  // The state before its subject: "inactive email address" (iCloud), "is a deactivated mailbox" (QQ), "Archived recipient" (La Poste),
  // "Invalid/inactive user", "Account administratively disabled", "554 Mailaddress is administratively disabled"
  String.raw`\b(?:disabled|deactivated|suspended|inactive|closed|terminated|locked|frozen|expired|archived) (?:account|mailbox|user|e-?mail address|address|recipient)\b|administratively (?:disabled|locked)`,
  // Inactivity: "Mailbox x is locked due to inactivity for more than 12 months", "Mailbox is blocked due to long-time inactivity",
  // "NOACTIVITY: Sorry, no recipient activity since"
  String.raw`\binactivity\b|no (?:recipient )?activity since`,
  // No longer in use: "x@yahoo.com is no longer valid." (Yahoo, sisimai Suspend), "recipient no longer on server" (iCloud),
  // "user no longer on system" , "This address no longer accepts mail" (sisimai Suspend)
  String.raw`\bno longer (?:valid|active|available|in use|exists?|accepts? (?:mail|messages|e-?mail)|on (?:this |the )?(?:server|system))\b`,
  // Receiving switched off: "552 x mail receiving disabled, rejecting", "user disabled; cannot receive new mail" ,
  // moved away: "550 5.1.6 address x has been replaced by y" (sisimai HasMoved)
  String.raw`(?:mail )?receiving (?:is )?disabled|cannot receive (?:new )?(?:mail|e-?mails?|messages)|\b(?:has|have) moved\b|has been replaced by`,
);
const FULL_TEXT = anyOf(
  // "Mailbox full", "mailbox is full" (Yahoo 552 5.2.2), "account is full (quota exceeded)", "522 sorry, recipient mailbox is full",
  // "550 Delivery error.Mailbox of x is FULL", "inbox is out of storage space" (Gmail OverQuotaTemp/Perm)
  String.raw`(?:mailbox|inbox|mail ?folder|account) (?:is )?full\b|\bfull mailbox\b|mailbox.{0,60}? is full\b|out of (?:storage )?space|\bstorage space\b`,
  // Quota: "over quota" (Gmail), "Over STORAGE quota" (T-Online), "user is overquota", "Recipient overquota" (Orange OFR_417),
  // "Quota exceeded." (GMX r1503), "Mailbox disk quota exceeded", "Quota is over for this user", "Account exceeds storage quota"
  String.raw`over ?quota|over (?:the |their |his |her )?(?:storage |disk |allowed |mailbox )?quota|quota (?:exceeded|exceed|violation|reached|is over)|exceeded (?:the |his/her |its )?(?:storage |space |mailbox )?quota|storage quota`,
  // RFC 5321 552 text "exceeded storage allocation", "Mailbox size limit exceeded", "552 Mailbox limit exeeded for this email address",
  // "Blocks limit exceeded / Inode limit exceeded", "User has exhausted allowed storage space" / "too many messages on the server" (web.de)
  String.raw`exceeded storage allocation|mailbox size limit|mailbox (?:limit )?exe?c?eeded|mailbox has exceeded|exceeds? (?:allowed size|maximum allowed storage)|would exceed (?:maximum allowed storage|(?:the )?quota)|exhausted (?:allowed )?storage|too many messages (?:on|in) (?:the|this) (?:server|mailbox)|not enough (?:disk |storage )?space`,
  // German: "Benutzer hat das Speichervolumen ueberschritten" / "Benutzer hat zuviele Mails auf dem Server" (web.de).
  // French: "Boite du destinataire pleine" (Orange OFR_417).
  String.raw`speichervolumen (?:ue|ü)berschritten|zu ?viele mails|bo[iî]te.{0,30}\bpleine\b`,
);
// "over quota and inactive" (Gmail OverQuotaPerm), "Recipient's mailbox is full, user account inactive" (Exim callout).
const INACTIVE_TEXT = /\binactiv(?:e|ity)\b/i;
// OpenSMTPD answers "550 Invalid recipient: <x>" both for an unknown recipient and when no
// `match` rule accepts the (sender, recipient) pair — a policy refusal of our sender
// (blunix.com OpenSMTPD relay guide: "550 Invalid recipient: <info@blunix.com>" for a correct
// recipient and an unmatched MAIL FROM). Same words, two meanings: evidence decides.
const OPENSMTPD_INVALID_RECIPIENT = /^invalid recipient: </i;
// au (KDDI) rejects mail stopped by the recipient's own reception filter with "550 : User unknown"
// (no address), a real unknown user with "550 <x@ezweb.ne.jp>: User unknown" (sisimai Rhost KDDI:
// "550 : user unknown" → filtered). The filtered form proves the mailbox exists and refuses us.
const KDDI_FILTERED = /^\s*:\s*user unknown\b/i;

const ambiguousFullOrMissing = (r: SmtpReply): boolean =>
  MISSING_TEXT.test(r.text) && (FULL_TEXT.test(r.text) || enhancedIs(r, /^[45]\.2\.2$/));

/** The table, in evaluation order. Exported for tests. */
export const REPLY_RULES: readonly Rule[] = [
  // "250 2.1.5 OK x1si123 - gsmtp"; 251 "User not local; will forward"; 252 "Cannot VRFY user, but will accept".
  { name: "accepted", matches: (r) => r.code >= 200 && r.code < 300, verdict: { kind: "accepted" } },

  // ---- 4xx: never a verdict about the mailbox, except over-quota which proves it exists ----
  // Rate wording first: a 4xx says "later", so "rate limited due to IP reputation" is a rate limit we retry, not a standing block.
  // "421 4.7.0 [TSS04] Messages from 203.0.113.9 temporarily deferred due to unexpected volume or user complaints" (Yahoo)
  // "421 4.7.0 Too many connections from your IP, try again later"
  // "450-4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered." (Gmail)
  // "451 4.7.650 The mail server [203.0.113.9] has been temporarily rate limited due to IP reputation." (Outlook.com)
  {
    name: "temp_rate",
    matches: (r) => isTemp(r) && RATE_TEXT.test(r.text),
    verdict: unknown("rate_limited"),
  },
  // "450 4.7.1 Client host rejected: cannot find your reverse hostname, [203.0.113.9]" (Postfix reject_unknown_client_hostname)
  // "451 4.7.1 Service unavailable - try again later; Client host [203.0.113.9] blocked using bl.spamcop.net"
  // "421 mwinf5c77 ME Service refuse. Veuillez essayer plus tard. Service refused, please try later. OFR_999 [999]" (Orange)
  {
    name: "temp_blocklist",
    matches: (r) => isTemp(r) && BLOCKLIST_TEXT.test(r.text),
    verdict: unknown("ip_blocklisted"),
  },
  // "450 4.2.0 <bob@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.com.html"
  // "451 4.7.1 Greylisted, try again after some time" (Zoho)
  {
    name: "greylisted",
    matches: (r) => isTemp(r) && GREYLIST_TEXT.test(r.text),
    verdict: unknown("greylisted"),
  },
  // Any other 421 closes the session for now: "421 4.7.0 Try again later, closing connection." (Gmail),
  // "421 Max message per connection reached, closing transmission channel" (Yahoo)
  { name: "temp_421", matches: (r) => r.code === 421, verdict: unknown("rate_limited") },
  // "452-4.2.2 The email account that you tried to reach is over quota." (Gmail): the server knows the mailbox.
  // Not "451 <x>: user unknown or mailbox full" (Vda bounce table): that one may be either.
  {
    name: "temp_mailbox_full",
    matches: (r) =>
      isTemp(r) && (enhancedIs(r, /^4\.2\.2$/) || FULL_TEXT.test(r.text)) && !MISSING_TEXT.test(r.text),
    verdict: FULL,
  },
  // "451 4.7.1 Please try again later" (Exchange/rspamd greylisting without the word)
  {
    name: "temp_4_7_1",
    matches: (r) => isTemp(r) && enhancedIs(r, /^4\.7\.1$/),
    verdict: unknown("greylisted"),
  },
  // "451 4.3.0 <bob@example.com>: Temporary lookup failure"; "450 4.1.1 <bob@example.com>: Recipient address rejected: unverified address"
  { name: "temp_other", matches: isTemp, verdict: unknown("temporary_failure") },

  // ---- 5xx that blame us ----
  // Microsoft 365 Directory-Based Edge Blocking rejects unknown recipients of the tenant with
  // "550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [DM6NAM10FT012.eop-nam10.prod.protection.outlook.com]"
  // (or "… Access denied. For more information see https://aka.ms/EXOSmtpErrors […]").
  // Only that pairing: "access denied" elsewhere is policy (rule below).
  {
    name: "m365_dbeb",
    matches: (r) =>
      isPerm(r) && enhancedIs(r, /^5\.4\.1$/) && /recipient address rejected: access denied/i.test(r.text),
    verdict: MISSING,
  },
  // "550 5.7.25 [203.0.113.9] The IP address sending this message does not have a PTR record setup" (Gmail); RFC 3463 X.7.25 "Reverse DNS validation failed" blames our IP whatever the words.
  {
    name: "perm_ptr",
    matches: (r) => isPerm(r) && enhancedIs(r, /^5\.7\.25$/),
    verdict: unknown("ip_blocklisted"),
  },
  // "554 5.7.1 Service unavailable; Client host [203.0.113.9] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/203.0.113.9"
  // "550 5.7.606 Access denied, banned sending IP [203.0.113.9]" (Microsoft)
  // "553 5.7.1 [BL21] Connections will not be accepted from 203.0.113.9, because the ip is in Spamhaus's list" (Yahoo)
  // "550 5.1.1 <x> Your IP has no Reverse DNS" (Vda table): a mailbox code with IP wording is still about our IP.
  {
    name: "perm_blocklist",
    matches: (r) => isPerm(r) && BLOCKLIST_TEXT.test(r.text),
    verdict: unknown("ip_blocklisted"),
  },
  // The recipient's own block of our sender (RECIPIENT_BLOCKS_SENDER_TEXT): after the IP rules (our IP named wins), before
  // the 5.7 and mailbox-code rules, since providers put it under 5.7.1 (Interia) or even 5.1.1 (Facebook).
  // "550 Envelope blocked - User Entry - https://community.mimecast.com/docs/DOC-1369#550 [gz1Vvz1VN9ikuIVSF81-Wg.au11]" (Mimecast)
  {
    name: "recipient_blocks_sender",
    matches: (r) => isPerm(r) && RECIPIENT_BLOCKS_SENDER_TEXT.test(r.text),
    verdict: unknown("recipient_blocks_sender"),
  },
  // "550 5.7.1 Too many invalid recipients"; "550-5.2.1 The user you are trying to contact is receiving mail at a rate that" (Gmail
  // ReceivingRatePerm: a 5.2.1 that is not a disabled mailbox); "550 5.2.121 Recipient's per hour message receive limit …" (Exchange Online)
  {
    name: "perm_rate",
    matches: (r) => isPerm(r) && RATE_TEXT.test(r.text),
    verdict: unknown("rate_limited"),
  },
  // RFC 3463 class 7 = security/policy: never about the mailbox, whatever the words.
  // "550 5.7.1 Relaying denied"; "553 5.7.1 <probe@our.example>: Sender address rejected: not owned by user";
  // "550 5.7.26 This mail has been blocked because the sender is unauthenticated" (Gmail DMARC).
  // Also "550 5.7.1 No such user!" (Yandex), "540 5.7.1 <x>: recipient address rejected: Inactive", "554 5.7.1 rejected: Inactive user"
  // (mail.ee): these providers put mailbox facts under a policy code; 5.7 still wins, since a 5.7 also covers "you are blocked".
  {
    name: "perm_5_7",
    matches: (r) => isPerm(r) && enhancedIs(r, /^5\.7\.\d+$/),
    verdict: unknown("policy_rejection"),
  },
  // "554 Relay access denied" (no enhanced code); "550-Verification failed for <probe@our.example>\n550 Sender verify failed" (Exim);
  // "550 5.1.1 <probe@our.example>: Sender address rejected: User unknown in local recipient table" (our MAIL FROM, not the recipient);
  // "550 Administrative prohibition" (Exim ACL); "541 5.4.1 Mail rejected by destination domain" (Zoho); "550 spam detected" (Free)
  {
    name: "perm_policy_text",
    matches: (r) => isPerm(r) && POLICY_TEXT.test(r.text),
    verdict: unknown("policy_rejection"),
  },
  // au/KDDI: "550 : User unknown" is the recipient's reception filter refusing us (see KDDI_FILTERED).
  {
    name: "kddi_filtered",
    matches: (r) => isPerm(r) && KDDI_FILTERED.test(r.text),
    verdict: unknown("policy_rejection"),
  },

  // ---- 5xx that are not about the mailbox after all ----
  // "550 Recipient Rejected: Temporarily inactive" (sisimai Suspend): a 5xx code on a state the server itself calls temporary.
  {
    name: "perm_temporary_state",
    matches: (r) => isPerm(r) && TEMP_STATE_TEXT.test(r.text),
    verdict: unknown("temporary_failure"),
  },

  // ---- contradictions between wording and code, or within the wording ----
  // "551 <x>: user unknown or mailbox full" (Vda bounce table), "550-e-mail address x doesn't exist or blocked or\n550 mailbox is full":
  // the server will not say which. A full mailbox exists, so never invalid; not "unclassified" either, because the engine would
  // then decide it from the server's other answers, which cannot tell full from missing. A later retry may find it emptied.
  // The same for a 5.2.2 code (mailbox full) on "user unknown" wording.
  {
    name: "ambiguous_full_or_missing",
    matches: (r) => isPerm(r) && ambiguousFullOrMissing(r),
    verdict: unknown("temporary_failure"),
  },
  // Full AND inactive: "552-5.2.2 The email account that you tried to reach is over quota and inactive." / "The recipient's inbox is
  // out of storage space and inactive." (Gmail OverQuotaPerm), "550-Callout verification failed: 550 550 Recipient's mailbox is full,
  // user account inactive". Gmail's own "550 5.2.1 … is inactive" is a disabled mailbox; over quota on top of that does not revive it:
  // the box is abandoned and bounces permanently → disabled. (A merely full mailbox stays `mailbox_full`, rule below.)
  {
    name: "full_but_inactive",
    matches: (r) =>
      isPerm(r) && FULL_TEXT.test(r.text) && (INACTIVE_TEXT.test(r.text) || DISABLED_TEXT.test(r.text)),
    verdict: DISABLED,
  },
  // Full wording wins over a mailbox code: "552 5.1.1 Boite du destinataire pleine. Recipient overquota. OFR_417 [417]" (Orange uses
  // 5.1.1 for every recipient error; sisimai Rhost FrancePTT: 417 → mailboxfull). "552 5.2.2 Mailbox full" (Exchange),
  // "552 Requested mail action aborted: exceeded storage allocation" (RFC 5321's own 552 text), "550 Quota Exceeded" (IONOS).
  { name: "full_text", matches: (r) => isPerm(r) && FULL_TEXT.test(r.text), verdict: FULL },

  // ---- RFC 3463 mailbox status codes, the strongest evidence a server gives ----
  // "550-5.1.1 The email account that you tried to reach does not exist. Please try\n550-5.1.1 double-checking ..." (Gmail)
  // "550 5.1.1 <bob@example.com>: Recipient address rejected: User unknown in virtual mailbox table" (Postfix)
  // "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup" (Exchange Online)
  // "550 5.1.6 recipient no longer on server: x@icloud.com" (iCloud; RFC 3463 X.1.6: mailbox moved, no forwarding address)
  { name: "perm_5_1_1", matches: (r) => isPerm(r) && enhancedIs(r, /^5\.1\.(?:1|6|10)$/), verdict: MISSING },
  // 5.2.1 alone is NOT a disabled mailbox: Gmail sends "550 5.2.1 … receiving mail at a rate" (rate, above), Exchange "5.2.1 content
  // filter agent quarantined this message" (policy, above), AOL "521 5.2.1 : AOL will not accept delivery of this message" (policy),
  // sisimai has "550 5.2.1 Host Unknown", and Interia documents "550 5.2.1 Mailbox not available" as "wrong address, full inbox or
  // suspended account". So 5.2.1 is decided by its words (disabled_text / missing_text below); a bare 5.2.1 stays unclassified.
  // 5.2.2 alone: "552 5.2.2 <x>... " with no recognised words is still the full-mailbox code.
  { name: "perm_5_2_2", matches: (r) => isPerm(r) && enhancedIs(r, /^5\.2\.2$/), verdict: FULL },

  // Syntax / sequence complaints are about our conversation, not the mailbox:
  // "501 5.1.3 Bad recipient address syntax"; "503 5.5.1 Error: need MAIL command"; "500 5.5.2 Error: bad syntax";
  // "504 Mailbox is disabled" (Vda table) stays here too: a 504 reply is not a mailbox verdict we can trust.
  {
    name: "perm_protocol",
    matches: (r) => r.code >= 500 && r.code <= 504,
    verdict: unknown("smtp_protocol_error"),
  },
  {
    name: "perm_5_1_3",
    matches: (r) => isPerm(r) && enhancedIs(r, /^5\.1\.3$/),
    verdict: unknown("smtp_protocol_error"),
  },
  // "550 Protocol violation" (sitepackage.de), "550 <bob@gmx.de>: Syntax error in parameters or arguments" (GMX)
  {
    name: "perm_protocol_text",
    matches: (r) => isPerm(r) && PROTOCOL_TEXT.test(r.text),
    verdict: unknown("smtp_protocol_error"),
  },

  // OpenSMTPD "550 Invalid recipient: <x>" may be a policy refusal of our sender (see OPENSMTPD_INVALID_RECIPIENT): evidence decides.
  {
    name: "opensmtpd_invalid_recipient",
    matches: (r) => isPerm(r) && OPENSMTPD_INVALID_RECIPIENT.test(r.text),
    verdict: unknown("unclassified_rejection"),
  },

  // ---- mailbox wording, for servers without enhanced codes or with generic ones (5.0.0, 5.5.0, 5.2.1) ----
  // "554 delivery error: dd This user doesn't have a yahoo.com account (bob@yahoo.com) [0] - mta1002.mail.ir2.yahoo.com" (Yahoo)
  // "552 1 Requested mail action aborted, mailbox not found" (Yahoo)
  // "550 No Such User Here" (cPanel Exim); "550 5.0.0 <bob@example.com>... User unknown" (Sendmail)
  // "550 5.1.1 hhtzumeItI371 Adresse d au moins un destinataire invalide. Invalid recipient. OFR_416 [416]" (Orange)
  { name: "missing_text", matches: (r) => isPerm(r) && MISSING_TEXT.test(r.text), verdict: MISSING },
  // "554 delivery error: dd Requested mail action aborted: mailbox disabled"; "550 5.2.1 Account disabled";
  // "554 delivery error: dd x@yahoo.com is no longer valid." (Yahoo); "550 <x@lycos.de>: Recipient address rejected: Account Closed" (Lycos)
  { name: "disabled_text", matches: (r) => isPerm(r) && DISABLED_TEXT.test(r.text), verdict: DISABLED },
  // Outlook.com answers an unknown consumer mailbox with
  // "550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302) [VI1EUR05FT012.eop-eur05.prod.protection.outlook.com]",
  // GMX with "550-Requested action not taken: mailbox unavailable\n550 For explanation visit https://postmaster.gmx.net/en/case?c=r1601…".
  // RFC 5321 uses "mailbox unavailable" as 550's generic text, which may also cover policy, so
  // only a bare 550 whose enhanced code is absent or generic qualifies (5.7.x and sender/policy
  // wordings were handled above), and not "mailbox unavailable or is not local" (a relay refusal).
  {
    name: "mailbox_unavailable_550",
    matches: (r) =>
      r.code === 550 &&
      (r.enhanced === null || /^5\.(?:0\.0|5\.0|1\.0)$/.test(r.enhanced)) &&
      /mailbox unavailable/i.test(r.text) &&
      !/not local/i.test(r.text),
    verdict: MISSING,
  },

  // No evidence about the mailbox: "554 Transaction failed"; "550 Unrouteable address" (Exim, also used for domain routing problems);
  // "524 5.2.4 Mailing list expansion problem" (OpenSMTPD lka_session.c, alias expansion failed); "550 #5.1.0 Address rejected"
  // (qmail-style code in the text); "550 5.2.1 Mailbox not available" (Interia). The engine decides these with evidence.
  { name: "perm_unclassified", matches: isPerm, verdict: unknown("unclassified_rejection") },
];

const PROTOCOL_ERROR: ReplyVerdict = unknown("smtp_protocol_error");

/** Classifies one RCPT (or MAIL, banner) reply: enhanced code and sender-blaming text first, then mailbox text. */
export function classifyReply(reply: SmtpReply): ReplyVerdict {
  return matchRule(reply)?.verdict ?? PROTOCOL_ERROR;
}

/** The rule that decided, for tests and logs; undefined for codes outside 2xx–5xx. */
export function matchRule(reply: SmtpReply): Rule | undefined {
  return REPLY_RULES.find((rule) => rule.matches(reply));
}

/**
 * A failure reply that ended the whole session (banner, EHLO, MAIL FROM, a 421 mid-way) says
 * nothing about any recipient: "550 5.1.1 Sender address unknown" at MAIL FROM must not make
 * recipients invalid. Returns the unknown reason to give every recipient left without an answer.
 */
export function sessionFailureReason(reply: SmtpReply): UnknownReason {
  const verdict = classifyReply(reply);
  if (verdict.kind === "unknown") return verdict.reason;
  return isTemp(reply) ? "temporary_failure" : "policy_rejection";
}
