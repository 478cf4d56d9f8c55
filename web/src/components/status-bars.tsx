// A task's results as a list owner reads them: the deliverable / risky / undeliverable summary,
// then one bar per status in the status's colour with its count and share. Plain HTML rather
// than a canvas: the numbers are text (readable, selectable, zoomable) and nothing animates.
import { RESULT_STATUSES, STATUS_LABEL, type ResultStatus } from "../lib/explain.ts";
import { formatNumber } from "../lib/format.ts";
import { GROUP_LABEL, GROUP_STATUSES, groupShares, percentOf } from "../lib/verdict-groups.ts";

/** The CSS custom property holding each status's colour (styles.css). */
export const STATUS_COLOR: Record<ResultStatus, string> = {
  valid: "--c-valid",
  invalid: "--c-invalid",
  catchall: "--c-catchall",
  invalid_syntax: "--c-syntax",
  disposable_domain: "--c-disposable",
  unknown: "--c-unknown",
};

const listOf = (statuses: readonly ResultStatus[]): string =>
  statuses.map((s) => STATUS_LABEL[s].toLowerCase()).join(" + ");

export function VerdictSummary({ counts }: { counts: Readonly<Record<ResultStatus, number>> }) {
  const shares = groupShares(counts);
  const verified = shares.reduce((n, s) => n + s.count, 0);
  return (
    <>
      <dl class="verdicts">
        {shares.map((s) => (
          <div key={s.group} class={`verdict verdict-${s.group}`}>
            <dt>{GROUP_LABEL[s.group]}</dt>
            <dd>
              <span class="verdict-count">{formatNumber(s.count)}</span>{" "}
              <span class="verdict-percent">{formatNumber(s.percent)} %</span>
            </dd>
          </div>
        ))}
      </dl>
      <p class="help">
        Of the {formatNumber(verified)} addresses with a result: deliverable ={" "}
        {listOf(GROUP_STATUSES.deliverable)}; risky = {listOf(GROUP_STATUSES.risky)} (may bounce; unknown
        results cost nothing and often settle on a later try); undeliverable ={" "}
        {listOf(GROUP_STATUSES.undeliverable)} (remove them).
      </p>
    </>
  );
}

export function StatusBars({
  title,
  counts,
}: {
  title: string;
  counts: Readonly<Record<ResultStatus, number>>;
}) {
  const verified = RESULT_STATUSES.reduce((n, s) => n + counts[s], 0);
  return (
    <div class="table-scroll" tabIndex={0} role="region" aria-label={`${title} (table)`}>
      <table class="status-bars">
        <caption>{title}</caption>
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Addresses
            </th>
            <th scope="col">Share</th>
          </tr>
        </thead>
        <tbody>
          {RESULT_STATUSES.map((s) => (
            <tr key={s}>
              <th scope="row">{STATUS_LABEL[s]}</th>
              <td class="num">{formatNumber(counts[s])}</td>
              <td class="status-bar-cell">
                <span class="status-bar-line">
                  <span class="status-bar-track" aria-hidden="true">
                    <span
                      class="status-bar"
                      style={{
                        width: `${verified > 0 ? (counts[s] / verified) * 100 : 0}%`,
                        background: `var(${STATUS_COLOR[s]})`,
                      }}
                    />
                  </span>
                  <span class="status-bar-percent">{formatNumber(percentOf(counts[s], verified))} %</span>
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
