// The Lists page's words for the server's dry run of an upload (web/src/lib/upload-quote.ts) and
// the form it sends.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  countsText,
  priceText,
  sameRequest,
  shortfallOf,
  uploadFormOf,
  type UploadQuote,
} from "../../../web/src/lib/upload-quote.ts";

const quote = (over: Partial<UploadQuote> = {}): UploadQuote => ({
  filename: "leads.csv",
  submitted_count: 1_953,
  unique_count: 1_653,
  duplicate_count: 300,
  skipped_count: 47,
  invalid_syntax_count: 12,
  sandbox_count: 0,
  credits_required: 1_653,
  balance: 94,
  has_enough_credits: false,
  ...over,
});

test("the price says about how many credits and the balance, with thousands separators", () => {
  assert.equal(priceText(quote()), "About 1,653 credits, you have 94.");
  assert.equal(priceText(quote({ credits_required: 1, balance: 1_200 })), "About 1 credit, you have 1,200.");
});

test("the counts name every kind of row, and leave out the kinds a list does not have", () => {
  assert.equal(
    countsText(quote({ sandbox_count: 2 })),
    "1,653 distinct addresses in 2,000 rows: 300 duplicate rows, 47 rows skipped (no address), " +
      "12 addresses with invalid syntax (billed, no mail server asked), 2 sandbox addresses (free).",
  );
  assert.equal(
    countsText(
      quote({
        submitted_count: 1,
        unique_count: 1,
        duplicate_count: 0,
        skipped_count: 0,
        invalid_syntax_count: 0,
      }),
    ),
    "1 distinct address in 1 row.",
  );
});

test("the shortfall is what the balance lacks, or null when it suffices", () => {
  assert.equal(shortfallOf(quote()), 1_559);
  assert.equal(shortfallOf(quote({ balance: 2_000, has_enough_credits: true })), null);
});

test("the form carries dry_run only for a dry run, and the fields only when set", () => {
  const file = new File(["email\na@b.test\n"], "leads.csv", { type: "text/csv" });
  const dry = uploadFormOf({ file, webhookUrl: "https://hooks.example.com/x", emailColumn: "Email" }, true);
  assert.deepEqual([...dry.keys()], ["webhook_url", "email_column", "dry_run", "file"]);
  assert.equal(dry.get("dry_run"), "true");
  const real = uploadFormOf({ file, webhookUrl: "", emailColumn: undefined }, false);
  assert.deepEqual([...real.keys()], ["file"]);
  assert.equal((real.get("file") as File).name, "leads.csv");
  assert.equal(
    sameRequest(
      { file, webhookUrl: "", emailColumn: undefined },
      { file, webhookUrl: "", emailColumn: undefined },
    ),
    true,
  );
  assert.equal(
    sameRequest(
      { file, webhookUrl: "", emailColumn: undefined },
      { file, webhookUrl: "x", emailColumn: undefined },
    ),
    false,
  );
});
