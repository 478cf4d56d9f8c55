import assert from "node:assert/strict";
import { test } from "node:test";
import { detectServerType, PROVIDER_TRAITS } from "../../../src/verify/providers.ts";

void test("server type from MX host names", () => {
  const cases: [string, string][] = [
    ["contoso-com.mail.protection.outlook.com", "microsoft365"],
    ["contoso-com.p-v1.mx.microsoft", "microsoft365"],
    ["contoso-us.mail.protection.office365.us", "microsoft365"],
    ["hotmail-com.olc.protection.outlook.com", "outlook"],
    ["eur.olc.protection.outlook.com", "outlook"],
    ["mx1.hotmail.com", "outlook"],
    ["aspmx.l.google.com", "google"],
    ["ALT1.ASPMX.L.GOOGLE.COM.", "google"],
    ["smtp.google.com", "google"],
    ["aspmx2.googlemail.com", "google"],
    ["mta5.am0.yahoodns.net", "yahoo"],
    ["mx-aol.mail.gm0.yahoodns.net", "yahoo"],
    ["mailin-03.mx.aol.com", "yahoo"],
    ["mx01.mail.icloud.com", "icloud"],
    ["mx.zoho.com", "zoho"],
    ["mx2.zoho.eu", "zoho"],
    ["mx.zohomail.com", "zoho"],
    ["in1-smtp.messagingengine.com", "fastmail"],
    ["mx.yandex.net", "yandex"],
    ["mx.yandex.ru", "yandex"],
    ["mxs.mail.ru", "mailru"],
    ["mx00.gmx.net", "gmx"],
    ["mx01.emig.gmx.net", "gmx"],
    ["mx-ha03.web.de", "gmx"],
    ["mx00.mail.com", "gmx"],
    ["mx00.kundenserver.de", "ionos"],
    ["mx00.ionos.co.uk", "ionos"],
    ["mx01.perfora.net", "ionos"],
    ["mail.protonmail.ch", "protonmail"],
    ["mailsec.protonmail.ch", "protonmail"],
    ["mx0a-00123401.pphosted.com", "proofpoint"],
    ["mx1-us1.ppe-hosted.com", "proofpoint"],
    ["eu-smtp-inbound-1.mimecast.com", "mimecast"],
    ["d40321a.ess.barracudanetworks.com", "barracuda"],
    ["esa1.hgst.iphmx.com", "ironport"],
    ["esa3.hc3370-68.iphmx.com", "ironport"],
    ["mx1.example.org", "unknown"],
    ["google.com.evil.example", "unknown"],
    ["gmail.com.example", "unknown"],
    ["notmail.ru.example", "unknown"],
    ["mx.ionos.evil.example", "unknown"],
  ];
  for (const [host, type] of cases) assert.equal(detectServerType([host]), type, host);
});

void test("host names win over banners; banners decide when names say nothing", () => {
  assert.equal(detectServerType(["aspmx.l.google.com"], ["mx.example ESMTP Postfix"]), "google");
  assert.equal(
    detectServerType(["mx1.example.org"], ["mx1.example.org ESMTP Postfix (Debian/GNU)"]),
    "postfix",
  );
  assert.equal(
    detectServerType(
      ["mail.example.net"],
      ["mail.example.net ESMTP Exim 4.96 Mon, 02 Sep 2024 10:00:00 +0000"],
    ),
    "exim",
  );
  assert.equal(detectServerType(["mx.example"], ["mx.google.com ESMTP d9443c01a7336 - gsmtp"]), "google");
  assert.equal(detectServerType(["mx.example"], ["", "mx.example Hello [127.0.0.1]"]), "unknown");
  assert.equal(
    detectServerType(["smtp.example", "backup.example"], ["service-3.mimecast.com ESMTP Mimecast Ltd."]),
    "mimecast",
  );
});

void test("server type from real banners", () => {
  const cases: [banner: string, type: string][] = [
    ["mx.example.org ESMTP OpenSMTPD", "opensmtpd"],
    ["mx0b-00000d03.pphosted.com ESMTP mfa-m0214089", "proofpoint"],
    ["mx.example.edu ESMTP cm-m0046761", "proofpoint"],
    ["iCloud iscream SMTP proxy - p00-iscream-smtp-d759469dd-ss5bd 3.5.0 (2403B23-529c1e05a5df)", "icloud"],
    ["mx.zoho.com ESMTP ready", "zoho"],
    ["mail.messagingengine.com ESMTP ready", "fastmail"],
    ["mxs.mail.ru ESMTP ready", "mailru"],
    ["gmx.com (mrgmx003) Nemesis ESMTP Service ready", "gmx"],
    ["web.de (mxweb005) Nemesis ESMTP Service ready", "gmx"],
    ["kundenserver.de (mreue106) Nemesis ESMTP Service ready", "ionos"],
    // Proton's front ends run Postfix; the provider is the better answer.
    ["mailinosl111.protonmail.ch ESMTP Postfix", "protonmail"],
    [
      "BN1BFFO11FD038.mail.protection.outlook.com Microsoft ESMTP MAIL Service ready at Mon, 18 Apr 2016 07:36:51 +0000",
      "microsoft365",
    ],
    ["mail1.fabrikam.com Microsoft ESMTP MAIL Service ready at Fri, 5 Aug 2016 16:24:41 -0700", "exchange"],
    [
      "smtp01.example.com Microsoft ESMTP MAIL Service, Version: 5.0.2172.1 ready at Tue, 29 Feb 2000",
      "exchange",
    ],
    ["mail.example.com ESMTP Sendmail 8.15.2/8.15.2; Mon, 2 Sep 2024 10:00:00 +0200", "sendmail"],
    ["mail.example.com - Welcome to Qmail Toaster Ver. 1.3 SMTP Server ESMTP", "qmail"],
    ["mx.example.com ESMTP", "unknown"],
  ];
  for (const [banner, type] of cases) assert.equal(detectServerType(["mx.example"], [banner]), type, banner);
});

void test("reply texts identify servers whose banner names nobody", () => {
  const cases: [reply: string, type: string][] = [
    ["5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup", "exchange"],
    ["5.1.1 <bob@example.com>: Recipient address rejected: User unknown in local recipient table", "postfix"],
    ["5.1.1 <bob@example.com>: Recipient address rejected: User unknown in virtual mailbox table", "postfix"],
    ["Unrouteable address", "exim"],
    ["#5.1.0 Address rejected.", "ironport"],
    ["2.1.5 Destination address valid: Recipient ok", "opensmtpd"],
    ["Invalid recipient: <bob@example.com>", "opensmtpd"],
    ["2.1.5 <bob@example.com>... Recipient ok", "sendmail"],
    ["sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)", "qmail"],
    ["sorry, no mailbox here by that name (#5.1.1 - chkuser)", "qmail"],
    ["Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550", "mimecast"],
    ["2.1.5 Ok", "unknown"],
  ];
  for (const [reply, type] of cases)
    assert.equal(detectServerType(["mx.example"], ["mx.example ESMTP"], [reply]), type, reply);
  // Addresses echoed back name the recipient's domain, not the server.
  assert.equal(
    detectServerType(
      ["mx.example"],
      [],
      ["5.1.1 <bob@zoho.com>: Recipient address rejected: User unknown in virtual alias table"],
    ),
    "postfix",
  );
  assert.equal(detectServerType(["mx.example"], [], ["2.1.5 bob@yahoo.com ok"]), "unknown");
  // Host names and banners still come first; the argument is optional (older callers).
  assert.equal(detectServerType(["mx.zoho.com"], [], ["Unrouteable address"]), "zoho");
  assert.equal(
    detectServerType(["mx.example"], ["mx.example ESMTP Postfix"], ["Unrouteable address"]),
    "postfix",
  );
  assert.equal(detectServerType(["mx.example"]), "unknown");
});

void test("accept-all providers are flagged", () => {
  for (const t of [
    "microsoft365",
    "yahoo",
    "proofpoint",
    "mimecast",
    "ironport",
    "exchange",
    "qmail",
  ] as const)
    assert.equal(PROVIDER_TRAITS[t].acceptsAllAtRcpt, true, t);
  for (const t of [
    "google",
    "outlook",
    "icloud",
    "zoho",
    "fastmail",
    "yandex",
    "mailru",
    "gmx",
    "ionos",
    "protonmail",
    "barracuda",
    "postfix",
    "exim",
    "opensmtpd",
    "sendmail",
    "unknown",
  ] as const)
    assert.equal(PROVIDER_TRAITS[t].acceptsAllAtRcpt, false, t);
});
