// `mailprobe client upload`'s price step (src/cli/upload-price.ts): the line it prints from the
// server's quote, and when it uploads, asks or stops.
import assert from "node:assert/strict";
import { test } from "node:test";
import { confirmQuestion, priceLine, shortMessage, uploadStep } from "../../../src/cli/upload-price.ts";
import type { UploadQuote } from "@mailprobe/client";

const quote = (over: Partial<UploadQuote> = {}): UploadQuote => ({
  filename: "list.csv",
  email_count: 4,
  submitted_count: 4,
  unique_count: 4,
  duplicate_count: 0,
  domain_count: 2,
  invalid_syntax_count: 0,
  sandbox_count: 0,
  skipped_count: 0,
  credits_required: 4,
  balance: 100,
  has_enough_credits: true,
  sheet: null,
  email_column: "email",
  ...over,
});

test("the price: distinct addresses, credits, the balance before and after", () => {
  assert.equal(priceLine(quote()), "list.csv: 4 addresses, 4 credits, balance 100 → 96");
  assert.equal(
    priceLine(quote({ unique_count: 1, credits_required: 1, balance: 1, submitted_count: 1 })),
    "list.csv: 1 address, 1 credit, balance 1 → 0",
  );
  assert.equal(
    priceLine(
      quote({
        submitted_count: 6,
        unique_count: 5,
        duplicate_count: 1,
        skipped_count: 1,
        sandbox_count: 2,
        credits_required: 3,
      }),
    ),
    "list.csv: 5 addresses, 3 credits, balance 100 → 97 (7 rows: 1 duplicate, 1 without an address, 2 sandbox addresses free)",
  );
  // A workbook: which sheet and column were priced.
  assert.equal(
    priceLine(quote({ filename: "crm.xlsx", sheet: "Contacts", email_column: "E-mail" })),
    "crm.xlsx (sheet Contacts, column E-mail): 4 addresses, 4 credits, balance 100 → 96",
  );
});

test("a short balance: how short, never a balance below zero", () => {
  const short = quote({ credits_required: 5, balance: 3, has_enough_credits: false });
  assert.equal(priceLine(short), "list.csv: 4 addresses, 5 credits, balance 3, 2 short");
  assert.equal(
    shortMessage(short),
    "not uploaded: 2 credits short (the list needs 5, the balance is 3); ask the server's operator for credits (mailprobe credits grant) or upload a shorter list",
  );
  assert.match(
    shortMessage(quote({ credits_required: 1, balance: 0, has_enough_credits: false })),
    /: 1 credit short/,
  );
});

test("the step: short before anything, then --dry-run, --yes, a terminal to ask on, else refuse", () => {
  const short = quote({ credits_required: 5, balance: 3, has_enough_credits: false });
  const cases: Array<[UploadQuote, { dryRun?: boolean; yes?: boolean }, boolean, string]> = [
    [short, { yes: true }, true, "short"],
    [short, { dryRun: true }, false, "short"],
    [quote(), { dryRun: true, yes: true }, true, "priced"],
    [quote(), { yes: true }, false, "upload"],
    [quote(), {}, true, "ask"],
    [quote(), {}, false, "refuse"],
  ];
  for (const [q, opts, canAsk, step] of cases)
    assert.equal(uploadStep(q, opts, canAsk), step, `${JSON.stringify(opts)}, canAsk ${String(canAsk)}`);
});

test("the question names the list and what it reserves", () => {
  assert.equal(confirmQuestion(quote()), "Upload list.csv and reserve 4 credits?");
  assert.equal(confirmQuestion(quote({ credits_required: 1 })), "Upload list.csv and reserve 1 credit?");
});
