import assert from "node:assert/strict";
import { test } from "node:test";
import { isDisposableDomain } from "../../../src/verify/lists/disposable.ts";
import { isRoleAccount } from "../../../src/verify/lists/role-accounts.ts";

void test("role accounts from the list, with +tag ignored", () => {
  for (const local of [
    "info",
    "sales",
    "support",
    "admin",
    "billing",
    "info+newsletter",
    "support+eu",
    '"info"',
  ]) {
    assert.equal(isRoleAccount(local), true, local);
  }
  for (const local of ["john.smith", "mary", "+info", "informatics"]) {
    assert.equal(isRoleAccount(local), false, local);
  }
});

void test("disposable domains, including any subdomain of a listed one", () => {
  assert.equal(isDisposableDomain("mailinator.com"), true);
  assert.equal(isDisposableDomain("MAILINATOR.com"), true);
  assert.equal(isDisposableDomain("x7k2.mailinator.com"), true);
  assert.equal(isDisposableDomain("a.b.mailinator.com"), true);
  assert.equal(isDisposableDomain("gmail.com"), false);
  assert.equal(isDisposableDomain("mailinator.com.example.org"), false);
  assert.equal(isDisposableDomain("com"), false);
});
