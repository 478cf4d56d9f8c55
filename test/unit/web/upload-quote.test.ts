// The Lists page's words for the server's quote of an upload (web/src/lib/upload-quote.ts) and
// the form fields it sends.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  countsText,
  isSameQuote,
  samePrice,
  sameRequest,
  shortfallOf,
  startButtonLabel,
  startButtonOf,
  startLabel,
  uploadFieldsOf,
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

test("the button's price: distinct addresses, credits reserved, the balance before and after", () => {
  const enough = { balance: 93, has_enough_credits: true };
  assert.equal(
    startLabel(quote({ unique_count: 17, credits_required: 11, ...enough })),
    "Verify 17 addresses for 11 credits (balance 93 → 82)",
  );
  assert.equal(
    startLabel(quote({ unique_count: 1, credits_required: 1, balance: 1, has_enough_credits: true })),
    "Verify 1 address for 1 credit (balance 1 → 0)",
  );
  assert.equal(
    startLabel(quote({ unique_count: 2, credits_required: 0, ...enough })),
    "Verify 2 addresses for 0 credits (balance 93 → 93)",
    "sandbox addresses only: free",
  );
  assert.equal(
    startLabel(quote({ balance: 12_500, has_enough_credits: true })),
    "Verify 1,653 addresses for 1,653 credits (balance 12,500 → 10,847)",
  );
  // Short: never a balance below zero, the shortfall instead.
  assert.equal(startLabel(quote()), "Verify 1,653 addresses for 1,653 credits (balance 94, 1,559 short)");
});

test("the button: priced and enabled, short and disabled, pricing, or unpriced after a failed dry run", () => {
  const enough = quote({ balance: 2_000, has_enough_credits: true });
  assert.deepEqual(startButtonOf(enough, "pending"), { kind: "priced", quote: enough });
  assert.deepEqual(startButtonOf(quote(), "none"), { kind: "short", quote: quote(), shortfall: 1_559 });
  assert.deepEqual(startButtonOf(null, "pending"), { kind: "pricing" });
  assert.deepEqual(startButtonOf(null, "failed"), { kind: "unpriced" });
  assert.deepEqual(startButtonOf(null, "none"), { kind: "start" });
  assert.deepEqual(
    (["start", "pricing", "unpriced"] as const).map((kind) => startButtonLabel({ kind })),
    ["Start verification", "Pricing the list…", "Start verification (price unavailable)"],
  );
  assert.equal(startButtonLabel({ kind: "priced", quote: enough }), startLabel(enough));
});

test("the upload goes ahead only at the price the button showed", () => {
  const shown = quote({ balance: 2_000, has_enough_credits: true });
  assert.equal(isSameQuote(shown, { ...shown }), true);
  assert.equal(isSameQuote(null, shown), false, "no price was shown");
  assert.equal(isSameQuote(shown, { ...shown, balance: 1_999 }), false, "the balance moved");
  assert.equal(isSameQuote(shown, { ...shown, credits_required: 1_654 }), false);
  assert.equal(isSameQuote(shown, { ...shown, unique_count: 1_654 }), false);
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

test("the quote and the upload send the same fields, each only when set", () => {
  const file = new File(["email\na@b.test\n"], "leads.csv", { type: "text/csv" });
  const none = { emailColumn: undefined, sheet: undefined };
  assert.deepEqual(
    uploadFieldsOf({
      file,
      webhookUrl: "https://hooks.example.com/x",
      emailColumn: "Email",
      sheet: "Contacts",
    }),
    { webhook_url: "https://hooks.example.com/x", email_column: "Email", sheet: "Contacts" },
  );
  assert.deepEqual(uploadFieldsOf({ file, webhookUrl: "", ...none }), {});
  assert.equal(sameRequest({ file, webhookUrl: "", ...none }, { file, webhookUrl: "", ...none }), true);
  assert.equal(sameRequest({ file, webhookUrl: "", ...none }, { file, webhookUrl: "x", ...none }), false);
  // The webhook URL is checked, not priced: the price stays while a new URL is checked.
  const other = new File(["email\na@b.test\n"], "leads.csv", { type: "text/csv" });
  assert.equal(samePrice({ file, ...none }, { file, ...none }), true);
  assert.equal(samePrice({ file, ...none }, { file, ...none, emailColumn: "Email" }), false);
  assert.equal(samePrice({ file, ...none }, { file: other, ...none }), false);
  // Another sheet is another list, another price.
  assert.equal(samePrice({ file, ...none, sheet: "A" }, { file, ...none, sheet: "B" }), false);
});
