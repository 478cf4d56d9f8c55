import { useEffect, useRef, useState } from "preact/hooks";
import { MailprobeError, quoteUploadTaskFile, uploadTaskFile } from "@mailprobe/client";
import { client, request } from "../api.ts";
import { ErrorMessage, Loading } from "../components/feedback.tsx";
import { setFlash } from "../flash.ts";
import { announce, useApi, useTitle } from "../hooks.ts";
import { decodeHead, parseCsvHead, parseTxtHead } from "../lib/csv.ts";
import { columnFieldValue, columnLetter, guessEmailColumn, type ColumnGuess } from "../lib/email-column.ts";
import { formatBytes, formatNumber, plural } from "../lib/format.ts";
import {
  countsText,
  isSameQuote,
  samePrice,
  sameRequest,
  startButtonLabel,
  startButtonOf,
  startLabel,
  uploadFieldsOf,
  type Pricing,
  type StartButton,
  type UploadQuote,
  type UploadRequest,
} from "../lib/upload-quote.ts";
import { firstSheetOf, sheetOptionLabel, sheetViewOf, type SheetView } from "../lib/sheet-choice.ts";
import { previewWorkbook } from "../lib/xlsx.ts";
import { keeper } from "../keep-across-sign-in.ts";
import { hrefOf, navigate } from "../router.ts";

/** Spec limits: 10,000 addresses per file; the size cap is MAX_UPLOAD_BYTES (default 10 MiB). */
const MAX_EMAILS = 10_000;
const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
const PREVIEW_ROWS = 20;
const HEAD_BYTES = 256 * 1024;
const ACCEPTED = [".txt", ".csv", ".xlsx"] as const;

type Kind = "txt" | "csv" | "xlsx";

interface Preview {
  kind: Kind;
  rows: string[][];
  guess: ColumnGuess | null;
  /** Set when the preview could not be made; the upload still works. */
  problem: string | null;
  delimiter: string | null;
  /** xlsx: every previewed sheet, the one shown (undefined until the user picks one), and why. */
  sheets?: SheetView[];
  sheetName?: string;
  sheetReason?: string;
}

/** The preview showing `view`, one of the workbook's sheets. */
const showingSheet = (preview: Preview, view: SheetView | undefined, reason: string): Preview => ({
  ...preview,
  rows: view?.rows ?? [],
  guess: view?.guess ?? null,
  sheetName: view?.name,
  sheetReason: reason,
});

const kindOf = (name: string): Kind | null => {
  const ext = name.toLowerCase().split(".").pop();
  return ext === "txt" || ext === "csv" || ext === "xlsx" ? ext : null;
};

const DELIMITER_NAME: Record<string, string> = { ",": "comma", ";": "semicolon", "\t": "tab" };

async function previewOf(file: File, kind: Kind): Promise<Preview> {
  try {
    if (kind === "xlsx") {
      const sheets = (await previewWorkbook(file, PREVIEW_ROWS + 1)).map(sheetViewOf);
      const first = firstSheetOf(sheets);
      const book: Preview = { kind, rows: [], guess: null, problem: null, delimiter: null, sheets };
      return showingSheet(
        book,
        sheets.find((v) => v.name === first.name),
        first.reason,
      );
    }
    const head = new Uint8Array(await file.slice(0, HEAD_BYTES).arrayBuffer());
    const truncated = file.size > HEAD_BYTES;
    const text = decodeHead(head, truncated);
    if (kind === "txt")
      return {
        kind,
        rows: parseTxtHead(text, PREVIEW_ROWS, truncated),
        guess: null,
        problem: null,
        delimiter: null,
      };
    const { rows, delimiter } = parseCsvHead(text, PREVIEW_ROWS + 1, truncated);
    return { kind, rows, guess: guessEmailColumn(rows), problem: null, delimiter };
  } catch (e) {
    return {
      kind,
      rows: [],
      guess: null,
      problem: e instanceof Error ? e.message : String(e),
      delimiter: null,
    };
  }
}

/** The email_column field for the column chosen in the preview; undefined lets the server detect it. */
const emailColumnOf = (preview: Preview | null, column: string): string | undefined =>
  preview && preview.guess && preview.kind !== "txt" && column !== "auto"
    ? columnFieldValue(preview.rows, preview.guess, Number(column))
    : undefined;

/** Uploads the list: its task is queued and its credits reserved. */
const postUpload = (r: UploadRequest) => request(uploadTaskFile(client, r.file, uploadFieldsOf(r)));

/** The price of the same form (POST /api/v1/tasks/batch/upload/quote): nothing is created. */
const postQuote = (r: UploadRequest) => request(quoteUploadTaskFile(client, r.file, uploadFieldsOf(r)));

/** The quote's answer for one request: its price, or the server's refusal of it. */
type Quote =
  | { state: "pending"; for: UploadRequest }
  | ReadyQuote
  | { state: "refused"; for: UploadRequest; error: unknown };
type ReadyQuote = { state: "ready"; for: UploadRequest; quote: UploadQuote };

async function quoteOf(r: UploadRequest): Promise<Quote> {
  try {
    return { state: "ready", for: r, quote: await postQuote(r) };
  } catch (error) {
    return { state: "refused", for: r, error };
  }
}

/** The server's reason for refusing the webhook URL, when that is what it refused. */
const webhookRefusalOf = (q: Quote | null): string | null =>
  q?.state === "refused" && q.error instanceof MailprobeError
    ? (q.error.details.find((d) => d.field === "webhook_url")?.reason ?? null)
    : null;

/** A workbook whose addresses are on several sheets, none picked yet: nothing to price or upload. */
const needsSheet = (preview: Preview | null): boolean =>
  preview?.sheets !== undefined && preview.sheetName === undefined;

/** The chosen list survives the sign-in form that replaces this page when the session ends. */
const chosenList = keeper<{ file: File; preview: Preview; column: string; webhookUrl: string }>();

export function ListsPage() {
  useTitle("Lists");
  const [kept] = useState(() => chosenList.take());
  const [file, setFile] = useState<File | null>(kept?.file ?? null);
  const [fileProblem, setFileProblem] = useState<string | null>(null);
  const [preview, setPreview] = useState<Preview | null>(kept?.preview ?? null);
  const [previewing, setPreviewing] = useState(false);
  const [column, setColumn] = useState(kept?.column ?? "auto");
  const [webhookUrl, setWebhookUrl] = useState(kept?.webhookUrl ?? "");
  const [dragging, setDragging] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // The webhook URL as last committed (change event), so typing does not send the file each key.
  const [checkedWebhookUrl, setCheckedWebhookUrl] = useState(kept?.webhookUrl.trim() ?? "");
  const [quote, setQuote] = useState<Quote | null>(null);
  // The last price the server gave, kept while a new webhook URL is checked (see samePrice).
  const [priced, setPriced] = useState<ReadyQuote | null>(null);
  // Bumped to ask the price again for the same list (credits granted while the page was open).
  const [asked, setAsked] = useState(0);
  function showQuote(q: Quote) {
    setQuote(q);
    if (q.state === "ready") setPriced(q);
  }
  // This page sends one request at a time: a quote holds one of the user's upload places on
  // the server while its file is read (UPLOADS_MAX_IN_PROGRESS_PER_USER, 2 by default), as the
  // upload does, so a price still being computed must not make the upload a 429.
  const queue = useRef<Promise<unknown>>(Promise.resolve());
  const lastQuote = useRef<{ for: UploadRequest; answer: Promise<Quote>; settled: Quote | null } | null>(
    null,
  );
  /** The quote of `r`: the last one's answer when it was for the same request, else a new one, queued. */
  function quoteFor(r: UploadRequest): Promise<Quote> {
    const last = lastQuote.current;
    // A refusal other than the request's own 400 (a 429, the network) is asked again.
    const isStale =
      last?.settled?.state === "refused" &&
      !(last.settled.error instanceof MailprobeError && last.settled.error.status === 400);
    if (last && sameRequest(last.for, r) && !isStale) return last.answer;
    const answer = queue.current.then(() => quoteOf(r));
    queue.current = answer;
    const entry = { for: r, answer, settled: null as Quote | null };
    lastQuote.current = entry;
    void answer.then((q) => (entry.settled = q));
    return answer;
  }
  const input = useRef<HTMLInputElement>(null);
  const webhookInput = useRef<HTMLInputElement>(null);
  const balance = useApi((signal) => request(client.GET("/api/v1/credits/balance", { signal })), []);
  useEffect(() => {
    // The file input shows the kept file again, as if just chosen.
    if (!kept || !input.current) return;
    const files = new DataTransfer();
    files.items.add(kept.file);
    input.current.files = files.files;
  }, [kept]);
  useEffect(
    () => chosenList.keep(file && preview ? { file, preview, column, webhookUrl } : null),
    [file, preview, column, webhookUrl],
  );

  const emailColumn = emailColumnOf(preview, column);
  const sheet = preview?.sheetName;
  // The price, asked as soon as a file is chosen and again when what would be sent changes.
  useEffect(() => {
    if (!file || !preview || needsSheet(preview)) {
      setQuote(null);
      return;
    }
    const r: UploadRequest = { file, webhookUrl: checkedWebhookUrl, emailColumn, sheet };
    let isCurrent = true;
    setQuote((shown) =>
      shown && shown.state !== "pending" && sameRequest(shown.for, r) ? shown : { state: "pending", for: r },
    );
    void quoteFor(r).then((q) => {
      if (!isCurrent) return;
      showQuote(q);
      if (q.state === "ready") announce(startLabel(q.quote));
    });
    return () => {
      isCurrent = false;
    };
  }, [file, preview, emailColumn, sheet, checkedWebhookUrl, asked]);

  /** Shows another sheet of the workbook; its email column is guessed afresh. */
  function pickSheet(name: string) {
    if (!preview?.sheets) return;
    const view = preview.sheets.find((v) => v.name === name);
    setPreview(showingSheet(preview, view, "you chose it"));
    setColumn(view && view.guess.column >= 0 ? String(view.guess.column) : "auto");
    announce(view ? `Sheet ${view.name}: ${sheetOptionLabel(view)}` : "No sheet chosen");
  }

  function askAgain() {
    lastQuote.current = null;
    setAsked((n) => n + 1);
    balance.reload();
  }

  async function choose(next: File | null) {
    setError(null);
    setPreview(null);
    setFileProblem(null);
    setFile(next);
    setColumn("auto");
    if (!next) return;
    const kind = kindOf(next.name);
    if (!kind) {
      setFileProblem(
        `“${next.name}” is not a .txt, .csv or .xlsx file; those are the formats a list can have.`,
      );
      return;
    }
    setPreviewing(true);
    const p = await previewOf(next, kind);
    setPreviewing(false);
    setPreview(p);
    if (p.guess && p.guess.column >= 0) setColumn(String(p.guess.column));
    announce(
      p.problem
        ? `Preview unavailable: ${p.problem}`
        : `Preview of ${next.name}: ${plural(p.rows.length, "row", "rows")} shown`,
    );
  }

  function onDrop(e: DragEvent) {
    e.preventDefault();
    setDragging(false);
    const dropped = e.dataTransfer?.files[0] ?? null;
    if (!dropped) return;
    // Mirror the drop into the input so the form and what a screen reader hears agree.
    if (input.current && e.dataTransfer) input.current.files = e.dataTransfer.files;
    void choose(dropped);
  }

  async function submit(e: Event) {
    e.preventDefault();
    if (!file) {
      setError(new Error("Choose a file first."));
      return;
    }
    setBusy(true);
    setError(null);
    const r: UploadRequest = { file, webhookUrl: webhookUrl.trim(), emailColumn, sheet };
    // The price on the button when it was pressed: the list is uploaded at that price or not at all.
    const shown = price;
    try {
      // A webhook URL the server refuses is caught by the quote before the list is uploaded.
      const checked = await quoteFor(r);
      showQuote(checked);
      setCheckedWebhookUrl(r.webhookUrl);
      if (webhookRefusalOf(checked) !== null) {
        announce("Webhook URL refused");
        webhookInput.current?.focus();
        return;
      }
      // A price the button did not show (it had none, or the balance moved meanwhile) is shown
      // first, on the button, and the upload waits for the next press.
      if (
        checked.state === "ready" &&
        !(checked.quote.has_enough_credits && isSameQuote(shown, checked.quote))
      ) {
        announce(startLabel(checked.quote));
        return;
      }
      const upload = queue.current.then(() => postUpload(r));
      queue.current = upload.catch(() => undefined);
      const accepted = await upload;
      setFlash(`${accepted.filename}: ${accepted.message}.`);
      announce("Upload accepted");
      chosenList.keep(null);
      navigate(hrefOf.task(accepted.task_id));
    } catch (err) {
      setError(err);
      announce("Upload refused");
    } finally {
      setBusy(false);
    }
  }

  const oversize = file !== null && file.size > DEFAULT_MAX_UPLOAD_BYTES;
  const price = file && priced && samePrice(priced.for, { file, emailColumn, sheet }) ? priced.quote : null;
  const start = startButtonOf(
    price,
    pricingOf(file !== null && fileProblem === null, quote, needsSheet(preview)),
  );
  // Shown while the field still holds the URL the server refused.
  const webhookRefusal = quote && quote.for.webhookUrl === webhookUrl.trim() ? webhookRefusalOf(quote) : null;

  return (
    <section>
      <h1 tabIndex={-1}>Verify a list</h1>
      <p class="lead">
        Upload a <strong>.txt</strong> (one address per line), <strong>.csv</strong> or <strong>.xlsx</strong>{" "}
        list of at most <strong>{MAX_EMAILS.toLocaleString()}</strong> addresses. Files up to{" "}
        {formatBytes(DEFAULT_MAX_UPLOAD_BYTES)} are accepted unless the operator changed the limit (
        <code>MAX_UPLOAD_BYTES</code>). One credit is reserved per distinct address when the list starts;
        unknown results are refunded when it finishes. Duplicates are verified and billed once.
      </p>
      {balance.data && (
        <p class="muted">
          Your balance: <strong>{plural(balance.data.balance, "credit", "credits")}</strong>.
        </p>
      )}
      <form class="stack" onSubmit={(e) => void submit(e)}>
        <div
          class={dragging ? "dropzone dragging" : "dropzone"}
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={onDrop}
        >
          <p class="dropzone-title" id="dropzone-help">
            Drop a file here, or choose one.
          </p>
          <div class="field">
            <label for="list-file">File</label>
            <input
              ref={input}
              id="list-file"
              name="file"
              type="file"
              accept={ACCEPTED.join(",")}
              aria-describedby="dropzone-help"
              onChange={(e) => void choose(e.currentTarget.files?.[0] ?? null)}
            />
          </div>
          {file && (
            <p class="muted small">
              {file.name}, {formatBytes(file.size)}
            </p>
          )}
        </div>
        {fileProblem && (
          <p class="error" role="alert">
            {fileProblem}
          </p>
        )}
        {oversize && (
          <p class="notice">
            This file is larger than {formatBytes(DEFAULT_MAX_UPLOAD_BYTES)}, the default limit: the server
            may refuse it.
          </p>
        )}
        {previewing && <Loading label="Reading the first rows…" />}
        {preview?.sheets && <SheetPicker preview={preview} sheets={preview.sheets} onSheet={pickSheet} />}
        {preview && file && !needsSheet(preview) && (
          <PreviewTable file={file} preview={preview} column={column} onColumn={setColumn} />
        )}
        <div class="field">
          <label for="webhook-url">Webhook URL</label>
          <input
            id="webhook-url"
            type="url"
            inputMode="url"
            placeholder="https://hooks.example.com/mailprobe"
            ref={webhookInput}
            value={webhookUrl}
            onInput={(e) => setWebhookUrl(e.currentTarget.value)}
            onChange={(e) => setCheckedWebhookUrl(e.currentTarget.value.trim())}
            aria-invalid={webhookRefusal !== null}
            aria-describedby={
              webhookRefusal !== null ? "webhook-url-problem webhook-url-help" : "webhook-url-help"
            }
          />
          {webhookRefusal !== null && (
            <p id="webhook-url-problem" class="error" role="alert">
              The server refuses this webhook URL: it {webhookRefusal}. The list was not uploaded.
            </p>
          )}
          <p id="webhook-url-help" class="help">
            Optional. When the list is done we POST a signed <code>task.completed</code> event there (see{" "}
            <a href={hrefOf.webhooks}>Webhooks</a>).
          </p>
        </div>
        {error !== null && <ErrorMessage error={error} title="The list was not accepted" />}
        <div class="start-row">
          <button
            type="submit"
            class="start"
            disabled={
              busy ||
              fileProblem !== null ||
              start.kind === "pricing" ||
              start.kind === "short" ||
              start.kind === "sheet"
            }
            aria-describedby={start.kind === "short" || start.kind === "priced" ? "start-help" : undefined}
          >
            {startButtonLabel(start)}
          </button>
          {busy && (
            <span class="loading inline" role="status">
              <span class="spinner" aria-hidden="true" /> Uploading and checking the file…
            </span>
          )}
        </div>
        {/* Below the button, not above it: the webhook field's change event (it fires on the
            mousedown of a click on Start, as the field loses focus) re-prices the list, and text
            that grew or shrank above the button moved it from under the pointer before the mouseup,
            so the click was lost. */}
        <StartHelp
          start={start}
          onAskAgain={askAgain}
          refusal={
            quote?.state === "refused" && error === null && webhookRefusalOf(quote) === null
              ? quote.error
              : null
          }
        />
      </form>
    </section>
  );
}

/** Where the chosen list's price stands (no quote yet: its preview is being made). */
function pricingOf(hasList: boolean, quote: Quote | null, sheetMissing: boolean): Pricing {
  if (!hasList) return "none";
  if (sheetMissing) return "sheet";
  return quote?.state === "refused" ? "failed" : "pending";
}

/**
 * Under the button: what the price counts, why the button is disabled and where credits come
 * from, or why there is no price.
 */
function StartHelp({
  start,
  refusal,
  onAskAgain,
}: {
  start: StartButton;
  refusal: unknown;
  onAskAgain: () => void;
}) {
  if (start.kind === "priced")
    return (
      <p id="start-help" class="help">
        {countsText(start.quote)} Credits of unknown results are refunded when the list finishes.
      </p>
    );
  if (start.kind === "short")
    return <ShortBalance quote={start.quote} shortfall={start.shortfall} onAskAgain={onAskAgain} />;
  if (start.kind !== "unpriced" || refusal === null) return null;
  // A 400 is about the list itself: the upload would be refused the same way.
  const isListRefused = refusal instanceof MailprobeError && refusal.status === 400;
  return (
    <ErrorMessage
      error={refusal}
      title={
        isListRefused
          ? "The server would refuse this list as it is"
          : "The list could not be priced; pressing Start asks again"
      }
    />
  );
}

/** The disabled button's reason, and what to do about it (credits come from the operator). */
function ShortBalance({
  quote,
  shortfall,
  onAskAgain,
}: {
  quote: UploadQuote;
  shortfall: number;
  onAskAgain: () => void;
}) {
  return (
    <div id="start-help" class="notice" role="status" aria-label="Not enough credits">
      <p>
        <strong>{plural(shortfall, "credit", "credits")} short:</strong> this list needs{" "}
        {plural(quote.credits_required, "credit", "credits")} and your balance is{" "}
        {formatNumber(quote.balance)}, so it cannot start until the balance covers it.
      </p>
      <p>
        Credits are granted by the operator of this server (<code>mailprobe credits grant</code>): ask for{" "}
        {plural(shortfall, "more credit", "more credits")}, or upload a shorter list. Your balance and what
        used it are on the <a href={hrefOf.credits}>Credits page</a>; the list stays chosen here.
      </p>
      <p class="muted small">{countsText(quote)}</p>
      <button type="button" class="secondary" onClick={onAskAgain}>
        Check the balance again
      </button>
    </div>
  );
}

/** The workbook's sheets: the one shown, why, and the others to choose from. */
function SheetPicker({
  preview,
  sheets,
  onSheet,
}: {
  preview: Preview;
  sheets: SheetView[];
  onSheet: (name: string) => void;
}) {
  const missing = preview.sheetName === undefined;
  return (
    <div class="field">
      <label for="list-sheet">Sheet</label>
      <select
        id="list-sheet"
        value={preview.sheetName ?? ""}
        onChange={(e) => onSheet(e.currentTarget.value)}
        aria-describedby="list-sheet-help"
        aria-invalid={missing}
      >
        {missing && <option value="">Choose the sheet with the list…</option>}
        {sheets.map((v) => (
          <option key={v.name} value={v.name}>
            {sheetOptionLabel(v)}
          </option>
        ))}
      </select>
      <p id="list-sheet-help" class={missing ? "notice" : "help"} role={missing ? "alert" : undefined}>
        {missing
          ? `This workbook's ${preview.sheetReason ?? "sheets hold addresses"}: choose the one to verify. Only that sheet is read.`
          : `Showing “${preview.sheetName}”, because ${preview.sheetReason ?? "it holds the list"}. Only this sheet is read; the download is your workbook with the results added to it.`}
      </p>
    </div>
  );
}

/** Scrolls the preview sideways, as little as needed, so that the email column shows whole. */
function revealChosenColumn(scroller: HTMLElement): void {
  const th = scroller.querySelector<HTMLElement>("th.chosen");
  if (!th) return;
  const left = th.offsetLeft;
  const right = left + th.offsetWidth;
  if (right > scroller.scrollLeft + scroller.clientWidth)
    scroller.scrollLeft = Math.min(left, right - scroller.clientWidth);
  else if (left < scroller.scrollLeft) scroller.scrollLeft = left;
}

function PreviewTable({
  file,
  preview,
  column,
  onColumn,
}: {
  file: File;
  preview: Preview;
  column: string;
  onColumn: (c: string) => void;
}) {
  if (preview.problem) {
    return (
      <p class="notice" role="status">
        No preview of {file.name}: {preview.problem}. You can still upload it: the server reads the whole file
        and finds the email column by itself.
      </p>
    );
  }
  if (preview.rows.length === 0) {
    return (
      <p class="notice" role="status">
        The first part of {file.name} holds no rows. Check that it is the right file.
      </p>
    );
  }
  const guess = preview.guess;
  const hasHeader = guess?.hasHeader ?? false;
  const header = hasHeader ? preview.rows[0]! : null;
  const body = (hasHeader ? preview.rows.slice(1) : preview.rows).slice(0, PREVIEW_ROWS);
  const width = Math.max(...preview.rows.map((r) => r.length), 1);
  const columns = Array.from({ length: Math.min(width, 200) }, (_, i) => i);
  const chosen = column === "auto" ? (guess?.column ?? -1) : Number(column);
  const scroller = useRef<HTMLDivElement>(null);
  // On a phone the preview scrolls sideways: the email column is brought into view, not left
  // cut off at the edge.
  useEffect(() => {
    if (scroller.current) revealChosenColumn(scroller.current);
  }, [chosen, preview]);
  const nameOf = (i: number): string => {
    const h = header?.[i]?.trim();
    return h ? `${columnLetter(i)}: ${h}` : `Column ${columnLetter(i)}`;
  };

  return (
    <div class="card stack">
      {preview.kind !== "txt" && guess && (
        <div class="field">
          <label for="email-column">Email column</label>
          <select
            id="email-column"
            value={column}
            onChange={(e) => onColumn(e.currentTarget.value)}
            aria-describedby="email-column-help"
          >
            <option value="auto">Detect automatically</option>
            {columns.map((i) => (
              <option key={i} value={String(i)}>
                {nameOf(i)}
              </option>
            ))}
          </select>
          <p id="email-column-help" class="help">
            {guess.column >= 0
              ? `Detected: ${nameOf(guess.column)}, because ${guess.reason}.`
              : `Nothing detected: ${guess.reason}. The server looks at the whole file; choose the column if you know it.`}
            {preview.delimiter
              ? ` Fields are separated by ${DELIMITER_NAME[preview.delimiter] ?? preview.delimiter}s.`
              : ""}
          </p>
        </div>
      )}
      {preview.kind === "txt" && (
        <p class="help">A .txt list has one address per line, so there is no column to choose.</p>
      )}
      {/* The caption stands outside the scroller: inside, it slid sideways with a wide table. */}
      <p class="table-caption" id="preview-caption">
        First {plural(body.length, "row", "rows")} of {file.name}
        {preview.sheetName ? `, sheet “${preview.sheetName}”` : ""}
      </p>
      <div
        ref={scroller}
        class="table-scroll"
        tabIndex={0}
        role="region"
        aria-label={`Preview of ${file.name}`}
      >
        <table class="preview" aria-labelledby="preview-caption">
          <thead>
            <tr>
              <th scope="col" class="rownum">
                #
              </th>
              {columns.map((i) => (
                <th scope="col" key={i} class={i === chosen ? "chosen" : undefined}>
                  {nameOf(i)}
                  {i === chosen && <span class="visually-hidden"> (email column)</span>}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {body.map((row, r) => (
              <tr key={r}>
                <th scope="row" class="rownum">
                  {r + 1}
                </th>
                {columns.map((i) => (
                  <td key={i} class={i === chosen ? "chosen" : undefined}>
                    {row[i] ?? ""}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
