import { formatNumber } from "../lib/format.ts";

/** Previous/next paging for limit/offset lists, with "21–40 of 95". */
export function Pager({
  offset,
  limit,
  total,
  label,
  onChange,
}: {
  offset: number;
  limit: number;
  total: number;
  /** What is paged, for the navigation landmark's name ("Tasks pages"). */
  label: string;
  onChange: (offset: number) => void;
}) {
  if (total <= limit && offset === 0) return null;
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager" aria-label={label}>
      <button
        type="button"
        class="secondary"
        disabled={offset === 0}
        onClick={() => onChange(Math.max(0, offset - limit))}
      >
        Previous
      </button>
      <span aria-live="polite">
        {formatNumber(first)}–{formatNumber(last)} of {formatNumber(total)}
      </span>
      <button
        type="button"
        class="secondary"
        disabled={last >= total}
        onClick={() => onChange(offset + limit)}
      >
        Next
      </button>
    </nav>
  );
}
