// Display formatting in the reader's locale; every date comes from the API in UTC.

const numberFormat = new Intl.NumberFormat();
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const shortDayFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  timeZone: "UTC",
});

export const formatNumber = (n: number): string => numberFormat.format(n);

export const formatDateTime = (iso: string | null | undefined): string =>
  iso ? dateTimeFormat.format(new Date(iso)) : "—";

/** A YYYY-MM-DD series day, shown as that UTC day. */
export const formatDay = (day: string): string => dateFormat.format(new Date(`${day}T00:00:00Z`));

/** "Nov 25": chart axis labels. */
export const formatShortDay = (day: string): string => shortDayFormat.format(new Date(`${day}T00:00:00Z`));

/** Series points up to `lastDay`: a range ending at midnight also lists that day, always zero. */
export const pointsThrough = <P extends { date: string }>(points: readonly P[], lastDay: string): P[] =>
  points.filter((p) => p.date <= lastDay);

export const plural = (n: number, one: string, many: string): string =>
  `${formatNumber(n)} ${n === 1 ? one : many}`;

/** "about 3 minutes", for ETAs. */
export function formatDuration(ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  if (s < 60) return plural(s, "second", "seconds");
  const m = Math.round(s / 60);
  if (m < 60) return plural(m, "minute", "minutes");
  const h = Math.floor(m / 60);
  const rest = m % 60;
  return rest
    ? `${plural(h, "hour", "hours")} ${plural(rest, "minute", "minutes")}`
    : plural(h, "hour", "hours");
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${formatNumber(bytes)} B`;
  const [value, unit] = bytes < 1024 * 1024 ? [bytes / 1024, "KB"] : [bytes / (1024 * 1024), "MB"];
  // "10 MB", "5.1 KB": one decimal only when it says something.
  return `${Number.isInteger(value) ? value.toString() : value.toFixed(1)} ${unit}`;
}

/** YYYY-MM-DD of a Date in UTC (for date inputs and API ranges). */
export const isoDay = (d: Date): string => d.toISOString().slice(0, 10);

/** Midnight UTC starting a YYYY-MM-DD day, as RFC 3339. */
export const startOfDay = (day: string): string => `${day}T00:00:00Z`;

/** Midnight UTC after a YYYY-MM-DD day (ranges are [from, to)). */
export function endOfDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().replace(".000Z", "Z");
}

export function daysAgo(n: number, from = new Date()): string {
  const d = new Date(from);
  d.setUTCDate(d.getUTCDate() - n);
  return isoDay(d);
}
