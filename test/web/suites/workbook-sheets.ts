// Workbook sheets in a real browser (registered by test/web/dashboard.test.ts): a workbook whose
// list is on its second sheet, behind a notes sheet with a stray address, is previewed, priced
// and verified on that sheet; a workbook with lists on two sheets chooses neither, keeps Start
// disabled until one is picked, and verifies the one picked. At 1280 and 390 px.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { xlsxOf } from "../../unit/files/helpers.ts";
import { assertNoSidewaysScroll, listsPageOf, screenshot } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;

/** "Read me" with a stray address first, the list on "Contacts" (3 addresses). */
const notesThenList = () =>
  xlsxOf((wb) => {
    const notes = wb.addWorksheet("Read me");
    notes.addRow(["Exported from the CRM; questions to help@acme.test"]);
    const list = wb.addWorksheet("Contacts");
    list.addRow(["Name", "Email", "Score"]);
    list.addRow(["Alice", "alice@acme.test", 7]);
    list.addRow(["Bob", "bob@acme.test", 3]);
    list.addRow(["Carol", "carol@acme.test", 9]);
  });

/** Lists on two sheets, both with an email header: "Leads" (2 addresses), "Old" (1). */
const twoLists = () =>
  xlsxOf((wb) => {
    const leads = wb.addWorksheet("Leads");
    leads.addRow(["Email"]);
    leads.addRow(["alice@acme.test"]);
    leads.addRow(["bob@acme.test"]);
    const old = wb.addWorksheet("Old");
    old.addRow(["E-mail"]);
    old.addRow(["carol@acme.test"]);
  });

const listsPage = (t: { after: (fn: () => Promise<void>) => void }, user: User, width = 1440) =>
  listsPageOf(browser, stack.base, t, user.api_key, width);

const button = (page: Page, name: string) => page.getByRole("button", { name, exact: true });

/** Starts the priced list and returns its task's upload counts, read through the API. */
async function startAndCount(page: Page, user: User, label: string): Promise<number> {
  await button(page, label).click();
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
  const taskId = /#\/tasks\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
  const task = await stack.api<{ metrics: { total_email_addresses: number } }>(
    user.api_key,
    "GET",
    `/api/v1/tasks/${taskId}`,
  );
  assert.equal(task.status, 200);
  return task.json.metrics.total_email_addresses;
}

/** Registers the sheet tests (inside a describe of dashboard.test.ts). */
export function workbookSheets(): void {
  before(() => {
    stack = shared.stack;
    browser = shared.browser;
  });

  test("1280 px: the list on the second sheet is found by its Email header, priced and verified there", async (t) => {
    const user = await stack.createUser(50);
    const page = await listsPage(t, user, 1280);
    await page.getByLabel("File").setInputFiles({
      name: "crm.xlsx",
      mimeType: "application/octet-stream",
      buffer: await notesThenList(),
    });
    const sheet = page.getByLabel("Sheet", { exact: true });
    await sheet.waitFor();
    assert.equal(await sheet.inputValue(), "Contacts");
    assert.match(
      await page.locator("#list-sheet-help").innerText(),
      /^Showing “Contacts”, because its column “Email” names the addresses\./,
    );
    const label = "Verify 3 addresses for 3 credits (balance 50 → 47)";
    await button(page, label).waitFor();
    await page.getByRole("region", { name: "Preview of crm.xlsx" }).getByText("carol@acme.test").waitFor();
    await assertNoSidewaysScroll(page, "lists with a workbook at 1280 px");
    await screenshot(page, "lists-sheet");
    assert.equal(await startAndCount(page, user, label), 3);
  });

  test("390 px: lists on two sheets: none chosen, Start disabled until one is picked, then that one is verified", async (t) => {
    const user = await stack.createUser(50);
    const page = await listsPage(t, user, 390);
    await page
      .getByLabel("File")
      .setInputFiles({ name: "two.xlsx", mimeType: "application/octet-stream", buffer: await twoLists() });
    const alert = page.locator("#list-sheet-help");
    await alert.waitFor();
    assert.match(
      await alert.innerText(),
      /addresses are on 2 sheets, “Leads”, “Old”: choose the one to verify/,
    );
    const waiting = button(page, "Choose the sheet to verify");
    assert.equal(await waiting.isDisabled(), true);
    await assertNoSidewaysScroll(page, "lists with two sheets at 390 px");
    await screenshot(page, "lists-sheet");
    await page.getByLabel("Sheet", { exact: true }).selectOption("Old");
    const label = "Verify 1 address for 1 credit (balance 50 → 49)";
    await button(page, label).waitFor();
    assert.equal(await startAndCount(page, user, label), 1);
  });
}
