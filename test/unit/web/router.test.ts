// The dashboard's hash router (web/src/lib/route.ts): every hash maps to a page, and a hash that
// is not valid percent-encoding is the not-found page instead of an exception (a URIError from
// decodeURIComponent used to leave the whole app blank).
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseHash, signInLinkToken } from "../../../web/src/lib/route.ts";

test("known routes, with or without a trailing slash or a query", () => {
  assert.deepEqual(parseHash(""), { page: "verify" });
  assert.deepEqual(parseHash("#/"), { page: "verify" });
  assert.deepEqual(parseHash("#/verify/"), { page: "verify" });
  assert.deepEqual(parseHash("#/tasks?limit=10"), { page: "tasks" });
  assert.deepEqual(parseHash("#/webhooks"), { page: "webhooks" });
  assert.deepEqual(parseHash("#/operator"), { page: "operator" });
  assert.deepEqual(parseHash("#/tasks/0D9B1E2C-3F4A-4B5C-8D6E-7F8091A2B3C4"), {
    page: "task",
    id: "0d9b1e2c-3f4a-4b5c-8d6e-7f8091a2b3c4",
  });
});

test("percent-encoded paths are decoded first", () => {
  assert.deepEqual(parseHash("#/%6Beys"), { page: "keys" });
  assert.deepEqual(parseHash("#/caf%C3%A9"), { page: "not-found", path: "/café" });
});

test("malformed percent-encoding is the not-found page, naming the hash as typed", () => {
  for (const raw of ["/%", "/%E0%A4%A", "/tasks/%zz", "/%C3", "/%ED%A0%80"]) {
    assert.deepEqual(parseHash(`#${raw}`), { page: "not-found", path: raw }, raw);
    assert.deepEqual(parseHash(`#${raw}?x=1`), { page: "not-found", path: raw }, `${raw}?x=1`);
  }
});

test("a sign-in link's token is read from #/sign-in?link=…; any other hash has none", () => {
  const token = `mpl_${"a1B2".repeat(10)}`;
  assert.equal(signInLinkToken(`#/sign-in?link=${token}`), token);
  assert.equal(signInLinkToken(`#/sign-in/?utm=x&link=${token}`), token);
  for (const hash of [
    "",
    "#/verify",
    "#/sign-in",
    "#/sign-in?link=",
    `#/tasks?link=${token}`,
    `#/sign-inx?link=${token}`,
  ])
    assert.equal(signInLinkToken(hash), null, hash);
});
