// One verification result, every field with what it means for the reader.
import type { VerificationResult } from "@mailprobe/client";
import {
  FIELD_MEANING,
  STATUS_MEANING,
  UNKNOWN_REASON_MEANING,
  isResultStatus,
  statusLabel,
} from "../lib/explain.ts";
import { formatDateTime } from "../lib/format.ts";

const yesNo = (b: boolean): string => (b ? "Yes" : "No");

type Checks = NonNullable<VerificationResult["checks"]>;

/** The checks in the order they run, with the words the card shows for each. */
const CHECK_LABELS: ReadonlyArray<[keyof Checks, string]> = [
  ["syntax", "Syntax"],
  ["dns", "Domain lookup"],
  ["mx", "Mail host"],
  ["reverse_dns", "Reverse DNS"],
  ["smtp", "Mail server's answer"],
];

const CHECK_STATUS_LABEL: Record<Checks["syntax"]["status"], string> = {
  passed: "Passed",
  failed: "Failed",
  error: "No answer",
  skipped: "Not run",
};

/** Each check's outcome: tells a failed lookup (no answer) from a domain without a mail host. */
function CheckList({ checks }: { checks: Checks }) {
  return (
    <section class="checks" aria-label="Checks">
      <h3 class="checks-title">Checks</h3>
      <ul>
        {CHECK_LABELS.map(([name, label]) => {
          const check = checks[name];
          return (
            <li key={name} class={`check check-${check.status}`}>
              <span class="check-name">{label}</span>{" "}
              <span class="check-status">{CHECK_STATUS_LABEL[check.status]}</span>
              {check.reason && <span class="check-reason"> ({check.reason.replaceAll("_", " ")})</span>}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{statusLabel(status)}</span>;
}

export function ResultCard({ result, cost }: { result: VerificationResult; cost?: string }) {
  const reason = result.unknown_reason;
  const rows: Array<[string, string, string]> = [
    ["Catch-all domain", yesNo(result.is_catchall), FIELD_MEANING.is_catchall],
    [
      "Needs a real message to confirm",
      yesNo(result.needs_physical_verify),
      FIELD_MEANING.needs_physical_verify,
    ],
    ["Role address", yesNo(result.is_role_based), FIELD_MEANING.is_role_based],
    ["Disposable domain", yesNo(result.is_disposable), FIELD_MEANING.is_disposable],
    ["Free mail provider", yesNo(result.is_free_provider ?? false), FIELD_MEANING.is_free_provider],
    ["Has MX records", yesNo(result.has_mx_records), FIELD_MEANING.has_mx_records],
    ["Reverse DNS", yesNo(result.has_reverse_dns), FIELD_MEANING.has_reverse_dns],
    ["Domain", result.domain_name || "—", FIELD_MEANING.domain_name],
    ["Mail server", result.host_name || "—", FIELD_MEANING.host_name],
    ["Server type", result.server_type || "—", FIELD_MEANING.server_type],
    ["Checked at", formatDateTime(result.validated_at), FIELD_MEANING.validated_at],
  ];
  return (
    <article class="card result" aria-labelledby="result-title">
      <header class="result-head">
        <h2 id="result-title" class="result-email">
          {result.email}
        </h2>
        <StatusBadge status={result.status} />
      </header>
      <p class="result-meaning">
        {isResultStatus(result.status) ? STATUS_MEANING[result.status] : `Status ${String(result.status)}.`}
      </p>
      {reason && (
        <p class="result-reason">
          <strong>Why unknown ({reason}):</strong> {UNKNOWN_REASON_MEANING[reason] ?? "See the reason code."}
        </p>
      )}
      {result.did_you_mean && (
        <p class="result-reason">
          <strong>Did you mean {result.did_you_mean}?</strong> The domain typed cannot receive mail and looks
          like a typo of a popular mail provider.
        </p>
      )}
      {result.needs_physical_verify && (
        <p class="result-reason">
          <strong>Needs physical verification:</strong> {FIELD_MEANING.needs_physical_verify}
        </p>
      )}
      {cost && (
        <p class="result-cost">
          <strong>Cost:</strong> {cost}
        </p>
      )}
      <dl class="facts">
        {rows.map(([term, value, meaning]) => (
          <div key={term} class="fact">
            <dt>{term}</dt>
            <dd>
              <span class="fact-value">{value}</span>
              <span class="fact-help">{meaning}</span>
            </dd>
          </div>
        ))}
      </dl>
      {result.checks && <CheckList checks={result.checks} />}
    </article>
  );
}
