import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_WEBHOOK_URL_LENGTH, webhookUrlProblem } from "../../../src/webhooks/url-policy.ts";

void test("URLs that are never acceptable, whatever allowPrivate says", () => {
  const cases: Array<[url: string, reason: RegExp]> = [
    ["ftp://example.com/hook", /http or https/],
    ["file:///etc/passwd", /http or https/],
    ["javascript:alert(1)", /http or https/],
    ["gopher://example.com:70/", /http or https/],
    ["/relative/path", /absolute/],
    ["example.com/hook", /absolute/],
    ["", /absolute/],
    ["http://", /absolute/],
    ["https://user:pass@example.com/hook", /credentials/],
    ["https://user@example.com/hook", /credentials/],
    ["https://:secret@example.com/hook", /credentials/],
    [`https://example.com/${"a".repeat(MAX_WEBHOOK_URL_LENGTH)}`, /at most/],
  ];
  for (const [url, reason] of cases) {
    for (const allowPrivate of [false, true]) {
      const problem = webhookUrlProblem(url, allowPrivate);
      assert.ok(problem !== null, `${url} (allowPrivate=${allowPrivate}) must be refused`);
      assert.match(problem, reason, url);
    }
  }
});

const PRIVATE_TARGETS: readonly string[] = [
  "http://127.0.0.1/hook",
  "http://127.0.0.1:8080/hook",
  "https://127.1.2.3/",
  "http://[::1]/hook",
  "http://[::1]:9000/hook",
  "http://[::ffff:127.0.0.1]/hook",
  "http://169.254.169.254/latest/meta-data/",
  "http://10.0.0.5/hook",
  "http://172.20.1.1/hook",
  "http://192.168.1.10/hook",
  "http://100.64.1.1/hook",
  "http://0.0.0.0:8080/",
  "http://[fd00:ec2::254]/",
  "http://[fe80::1]/",
  "http://localhost/hook",
  "http://LOCALHOST:3000/hook",
  "http://localhost./hook",
  "http://api.localhost/hook",
  // Obfuscated IPv4 forms the URL parser normalises to 127.0.0.1 / 169.254.169.254
  "http://2130706433/",
  "http://0x7f.1/",
  "http://127.1/",
  "http://0251.0376.0251.0376/",
];

void test("loopback, private, link-local, metadata literals and localhost are refused by default", () => {
  for (const url of PRIVATE_TARGETS) {
    const problem = webhookUrlProblem(url, false);
    assert.ok(problem !== null, `${url} must be refused`);
    assert.match(problem, /localhost|loopback, private or link-local/, url);
  }
});

void test("with allowPrivate the same URLs are accepted", () => {
  for (const url of PRIVATE_TARGETS) assert.equal(webhookUrlProblem(url, true), null, url);
});

void test("public hostnames and public literals are accepted", () => {
  for (const url of [
    "https://example.com/webhooks/mailprobe",
    "http://hooks.zapier.com/hooks/catch/123/abc/",
    "https://n8n.example.org:5678/webhook/uuid?token=x#frag",
    "https://8.8.8.8/hook",
    "https://[2606:4700:4700::1111]/hook",
    "https://localhost.example.com/hook", // only localhost and *.localhost are special
    "https://10.example.com/hook",
  ]) {
    assert.equal(webhookUrlProblem(url, false), null, url);
  }
});
