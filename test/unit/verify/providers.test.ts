import assert from "node:assert/strict";
import { test } from "node:test";
import { detectServerType, PROVIDER_TRAITS } from "../../../src/verify/providers.ts";

void test("server type from MX host names", () => {
  const cases: [string, string][] = [
    ["contoso-com.mail.protection.outlook.com", "microsoft365"],
    ["hotmail-com.olc.protection.outlook.com", "outlook"],
    ["aspmx.l.google.com", "google"],
    ["ALT1.ASPMX.L.GOOGLE.COM.", "google"],
    ["aspmx2.googlemail.com", "google"],
    ["mta5.am0.yahoodns.net", "yahoo"],
    ["mx0a-00123401.pphosted.com", "proofpoint"],
    ["mx1-us1.ppe-hosted.com", "proofpoint"],
    ["eu-smtp-inbound-1.mimecast.com", "mimecast"],
    ["mx1.example.org", "unknown"],
    ["google.com.evil.example", "unknown"],
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

void test("accept-all providers are flagged", () => {
  assert.equal(PROVIDER_TRAITS.microsoft365.acceptsAllAtRcpt, true);
  assert.equal(PROVIDER_TRAITS.yahoo.acceptsAllAtRcpt, true);
  assert.equal(PROVIDER_TRAITS.proofpoint.acceptsAllAtRcpt, true);
  assert.equal(PROVIDER_TRAITS.mimecast.acceptsAllAtRcpt, true);
  assert.equal(PROVIDER_TRAITS.google.acceptsAllAtRcpt, false);
  assert.equal(PROVIDER_TRAITS.outlook.acceptsAllAtRcpt, false);
  assert.equal(PROVIDER_TRAITS.postfix.acceptsAllAtRcpt, false);
});
