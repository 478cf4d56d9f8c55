// Downloads of the results: the clean lists and the chosen statuses and format.
import { useState } from "preact/hooks";
import type { Task } from "@mailprobe/client";
import { downloadTask, errorMessage, type DownloadFormat } from "../../api.ts";
import { ErrorMessage, Loading } from "../../components/feedback.tsx";
import { announce } from "../../hooks.ts";
import { RESULT_STATUSES, STATUS_LABEL } from "../../lib/explain.ts";
import { GROUP_STATUSES } from "../../lib/verdict-groups.ts";

/** The one-click downloads of the rows worth sending to (lib/verdict-groups.ts says "deliverable"). */
const CLEAN_LISTS: ReadonlyArray<{ label: string; statuses: readonly string[] }> = [
  { label: "Deliverable only", statuses: GROUP_STATUSES.deliverable },
  { label: "Deliverable + catch-all", statuses: [...GROUP_STATUSES.deliverable, "catchall"] },
];

export function DownloadSection({ task }: { task: Task }) {
  const [statuses, setStatuses] = useState<string[]>([]);
  const [escape, setEscape] = useState(true);
  // What is being prepared, in words ("the CSV file", "the deliverable-only list").
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const running = task.finished_at === null;

  async function download(format: DownloadFormat, only: readonly string[], what: string) {
    setBusy(what);
    setError(null);
    setDone(null);
    try {
      const name = await downloadTask(task.id, format, only, escape);
      setDone(`Saved ${name}.`);
      announce(`Downloaded ${name}`);
    } catch (err) {
      setError(err);
      announce(`Download failed: ${errorMessage(err)}`);
    } finally {
      setBusy(null);
    }
  }

  const toggle = (s: string, on: boolean) =>
    setStatuses((cur) => (on ? [...cur, s] : cur.filter((x) => x !== s)));

  return (
    <section class="card" aria-labelledby="download-title">
      <h2 id="download-title">Download results</h2>
      {running && (
        <p class="notice">
          The task is still running: a download holds what is finished so far, and rows not verified yet have
          status <code>pending</code>.
        </p>
      )}
      <h3>Clean lists</h3>
      <p class="help" id="clean-help">
        One click, as CSV with your file's columns: only the addresses you can send to, or those plus the
        catch-all ones (risky: their domains accept every address).
      </p>
      <div class="button-row">
        {CLEAN_LISTS.map((c) => (
          <button
            key={c.label}
            type="button"
            disabled={busy !== null}
            aria-describedby="clean-help"
            onClick={() => void download("csv", c.statuses, `the ${c.label.toLowerCase()} list`)}
          >
            {`Download ${c.label.toLowerCase()}`}
          </button>
        ))}
      </div>
      <h3>Choose what to download</h3>
      <fieldset class="checks">
        <legend>Statuses to include</legend>
        <p class="help">
          None ticked: every row. csv and xlsx keep your file's original columns, then the results.
        </p>
        {RESULT_STATUSES.map((s) => (
          <label key={s} class="check">
            <input
              type="checkbox"
              checked={statuses.includes(s)}
              onChange={(e) => toggle(s, e.currentTarget.checked)}
            />
            {STATUS_LABEL[s]}
          </label>
        ))}
      </fieldset>
      <div class="check-block">
        <label class="check">
          <input
            type="checkbox"
            checked={escape}
            onChange={(e) => setEscape(e.currentTarget.checked)}
            aria-describedby="escape-help"
          />
          Escape formulas
        </label>
        <p id="escape-help" class="help">
          In CSV and TXT, cells a spreadsheet would run as formulas (starting with <code>=</code> or{" "}
          <code>@</code>, or <code>+</code>/<code>-</code> followed by more than a number or phone number) get
          a leading <code>'</code>: a hostile cell could otherwise run commands or leak data when the file is
          opened. Phone numbers such as <code>+1 555 6330</code> are never touched, and XLSX needs no
          escaping. Keep it on for files people open in Excel or Sheets; turn it off for programs that need
          the raw values (an address like <code>+info@example.com</code> then stays unchanged).
        </p>
      </div>
      <div class="button-row">
        {(["csv", "txt", "xlsx"] as const).map((f) => (
          <button
            key={f}
            type="button"
            class="secondary"
            disabled={busy !== null}
            onClick={() => void download(f, statuses, `the ${f.toUpperCase()} file`)}
          >
            {`Download ${f.toUpperCase()}`}
          </button>
        ))}
      </div>
      {busy && <Loading label={`Preparing ${busy}…`} />}
      {done && (
        <p class="muted" role="status">
          {done}
        </p>
      )}
      {error !== null && <ErrorMessage error={error} title="The download failed" />}
    </section>
  );
}
