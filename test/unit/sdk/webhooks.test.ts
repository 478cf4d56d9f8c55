// The SDK's webhook verifier (sdk/src/webhooks.ts, WebCrypto) against the server's own signer
// (src/webhooks/signing.ts, the standardwebhooks reference library): what one signs the other
// accepts, and each way a delivery can be wrong is refused with its own reason.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import {
  verifyWebhookSignature,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type VerifyWebhookInput,
} from "../../../sdk/src/webhooks.ts";
import { serializeWebhookPayload, taskCompletedPayload } from "../../../src/webhooks/payload.ts";
import { signWebhook } from "../../../src/webhooks/signing.ts";

const secret = "whsec_" + randomBytes(24).toString("base64");
const at = new Date("2026-03-10T12:00:00Z");
const atSeconds = at.getTime() / 1000;
const metrics = {
  total_email_addresses: 2,
  job_status: { pending: 0, processing: 0, completed: 2, failed: 0 },
  progress: 1,
  progress_percent: 100,
};
// The exact bytes the dispatcher sends (a non-ASCII address checks the UTF-8 handling).
const body = serializeWebhookPayload({
  ...taskCompletedPayload({ taskId: "0b6f3c8e-3f4e-4a39-9d6e-0c1f0e7b9a11", uploadId: null, metrics }, at),
  note: "josé@exämple.test",
});

/** The server's headers for `body`, as the plain record a receiver's framework hands over. */
function signedHeaders(key: string, id: string, when: Date, text: string): Record<string, string> {
  return { ...signWebhook(key, id, when, text) };
}

function signed(overrides: { body?: string; secret?: string; at?: Date } = {}) {
  const headers = signedHeaders(overrides.secret ?? secret, "msg_2f1a", overrides.at ?? at, body);
  return { payload: overrides.body ?? body, headers };
}

async function verify(input: Partial<VerifyWebhookInput> & Pick<VerifyWebhookInput, "payload">) {
  return verifyWebhookSignature({ secret, now: at, ...input } as VerifyWebhookInput);
}

describe("accepts what the server signs", () => {
  test("plain header record, string body: ok with the parsed event", async () => {
    const { payload, headers } = signed();
    const result = await verify({ payload, headers });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.id, "msg_2f1a");
    assert.equal(result.timestamp, atSeconds);
    assert.equal(result.event.type, "task.completed");
    assert.equal(result.event.data.task_id, "0b6f3c8e-3f4e-4a39-9d6e-0c1f0e7b9a11");
    assert.deepEqual(result.event.data.metrics, metrics);
  });

  test("raw bytes, fetch Headers, Node-style arrays, any header case", async () => {
    const { headers } = signed();
    const bytes = new TextEncoder().encode(body);
    assert.ok((await verify({ payload: bytes, headers: new Headers({ ...headers }) })).ok);
    const shouting = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), [v]]));
    assert.ok((await verify({ payload: bytes, headers: shouting })).ok);
  });

  test("id + timestamp + signature given separately", async () => {
    const { headers } = signed();
    const result = await verify({
      payload: body,
      id: headers[WEBHOOK_ID_HEADER],
      timestamp: headers[WEBHOOK_TIMESTAMP_HEADER],
      signature: headers[WEBHOOK_SIGNATURE_HEADER],
    });
    assert.ok(result.ok);
  });

  test("one matching entry among several (secret rotation) and unknown versions ignored", async () => {
    const { headers } = signed();
    const other = signedHeaders("whsec_" + randomBytes(24).toString("base64"), "msg_2f1a", at, body);
    const signature = `v2,abc ${other[WEBHOOK_SIGNATURE_HEADER]} ${headers[WEBHOOK_SIGNATURE_HEADER]}`;
    assert.ok(
      (await verify({ payload: body, headers: { ...headers, [WEBHOOK_SIGNATURE_HEADER]: signature } })).ok,
    );
  });

  test("a rotation's header (the server signs with both secrets) verifies with either, not a third", async () => {
    const next = "whsec_" + randomBytes(24).toString("base64");
    const headers = { ...signWebhook([next, secret], "msg_2f1a", at, body) };
    const entries = headers[WEBHOOK_SIGNATURE_HEADER].split(" ");
    assert.equal(entries.length, 2);
    assert.ok(entries.every((e) => /^v1,[A-Za-z0-9+/]{43}=$/.test(e)));
    assert.ok((await verify({ payload: body, headers })).ok, "previous secret");
    assert.ok((await verify({ payload: body, headers, secret: next })).ok, "new secret");
    const stranger = "whsec_" + randomBytes(24).toString("base64");
    assert.deepEqual(await verify({ payload: body, headers, secret: stranger }), {
      ok: false,
      reason: "signature_mismatch",
    });
    // The reference library accepts the same header with either secret.
    const live = { ...signWebhook([next, secret], "msg_2f1a", new Date(), body) };
    assert.doesNotThrow(() => new Webhook(secret).verify(body, live));
    assert.doesNotThrow(() => new Webhook(next).verify(body, live));
  });

  test("within the tolerance both ways; the boundary is inclusive like the reference library", async () => {
    const { payload, headers } = signed();
    for (const skew of [-300, -1, 0, 1, 300]) {
      const result = await verify({ payload, headers, now: (atSeconds + skew) * 1000 });
      assert.ok(result.ok, `skew ${skew}: ${JSON.stringify(result)}`);
    }
  });

  test("agrees with standardwebhooks' own verify on the same delivery", async () => {
    const { payload, headers } = signed({ at: new Date() });
    assert.doesNotThrow(() => new Webhook(secret).verify(payload, headers));
    assert.ok((await verifyWebhookSignature({ payload, headers, secret })).ok);
  });
});

describe("refuses, with the reason", () => {
  const cases: Array<[string, () => Parameters<typeof verify>[0], string]> = [
    [
      "tampered body",
      () => ({ ...signed(), payload: body.replace('"progress":1', '"progress":0') }),
      "signature_mismatch",
    ],
    ["one extra byte", () => ({ ...signed(), payload: body + " " }), "signature_mismatch"],
    [
      "wrong secret",
      () => signed({ secret: "whsec_" + randomBytes(24).toString("base64") }),
      "signature_mismatch",
    ],
    [
      "another delivery's id",
      () => {
        const { payload, headers } = signed();
        return { payload, headers: { ...headers, [WEBHOOK_ID_HEADER]: "msg_other" } };
      },
      "signature_mismatch",
    ],
    [
      "timestamp changed after signing",
      () => {
        const { payload, headers } = signed();
        return { payload, headers: { ...headers, [WEBHOOK_TIMESTAMP_HEADER]: String(atSeconds - 1) } };
      },
      "signature_mismatch",
    ],
    [
      "stale (301 s old)",
      () => ({ ...signed({ at: new Date(at.getTime() - 301_000) }) }),
      "timestamp_too_old",
    ],
    [
      "from the future (301 s)",
      () => ({ ...signed({ at: new Date(at.getTime() + 301_000) }) }),
      "timestamp_too_new",
    ],
    [
      "timestamp not a number",
      () => {
        const { payload, headers } = signed();
        return { payload, headers: { ...headers, [WEBHOOK_TIMESTAMP_HEADER]: "2026-03-10T12:00:00Z" } };
      },
      "malformed_timestamp",
    ],
    [
      "timestamp in milliseconds",
      () => {
        const { payload, headers } = signed();
        return { payload, headers: { ...headers, [WEBHOOK_TIMESTAMP_HEADER]: String(at.getTime()) } };
      },
      "timestamp_too_new",
    ],
    [
      "signature without a version",
      () => {
        const { payload, headers } = signed();
        const bare = headers[WEBHOOK_SIGNATURE_HEADER]!.slice("v1,".length);
        return { payload, headers: { ...headers, [WEBHOOK_SIGNATURE_HEADER]: bare } };
      },
      "malformed_signature",
    ],
    [
      "signature not base64",
      () => {
        const { payload, headers } = signed();
        return { payload, headers: { ...headers, [WEBHOOK_SIGNATURE_HEADER]: "v1,not*base64!" } };
      },
      "malformed_signature",
    ],
    [
      "signature header missing",
      () => {
        const { payload, headers } = signed();
        const { [WEBHOOK_SIGNATURE_HEADER]: _dropped, ...rest } = headers;
        return { payload, headers: rest };
      },
      "missing_headers",
    ],
    ["no headers at all", () => ({ payload: body, headers: {} }), "missing_headers"],
    [
      "id empty",
      () => {
        const { payload, headers } = signed();
        return { payload, headers: { ...headers, [WEBHOOK_ID_HEADER]: "" } };
      },
      "missing_headers",
    ],
  ];
  for (const [name, input, reason] of cases) {
    test(`${name} → ${reason}`, async () => {
      assert.deepEqual(await verify(input()), { ok: false, reason });
    });
  }

  test("a tighter tolerance refuses what the default accepts", async () => {
    const { payload, headers } = signed();
    const now = (atSeconds + 120) * 1000;
    assert.ok((await verify({ payload, headers, now })).ok);
    assert.deepEqual(await verify({ payload, headers, now, toleranceSeconds: 60 }), {
      ok: false,
      reason: "timestamp_too_old",
    });
  });

  test("a correctly signed body that is not JSON → malformed_payload", async () => {
    const headers = signedHeaders(secret, "msg_x", at, "not json");
    assert.deepEqual(await verify({ payload: "not json", headers }), {
      ok: false,
      reason: "malformed_payload",
    });
  });

  test("a secret that is not base64 is a configuration fault: it throws", async () => {
    const { payload, headers } = signed();
    await assert.rejects(verify({ payload, headers, secret: "whsec_***" }), TypeError);
    await assert.rejects(verify({ payload, headers, secret: "whsec_" }), TypeError);
  });
});
