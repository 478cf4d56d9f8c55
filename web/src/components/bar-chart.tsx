// A bar chart (Chart.js, loaded on first use) with its data as a table for those who cannot see
// the canvas: the canvas is role="img" with a summary, the table is one click away.
import { useEffect, useRef, useState } from "preact/hooks";
import type { BarChartSpec, ChartHandle } from "../charts.ts";

export interface BarSeries {
  label: string;
  values: number[];
  /** A CSS custom property name holding the color (e.g. "--c-valid"). */
  color: string;
}

export function BarChart({
  title,
  summary,
  labels,
  series,
  stacked = false,
  horizontal = false,
  tableCaption,
}: {
  title: string;
  /** One sentence a screen reader hears instead of the picture. */
  summary: string;
  labels: string[];
  series: BarSeries[];
  stacked?: boolean;
  horizontal?: boolean;
  tableCaption?: string;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<ChartHandle | null>(null);
  const [failed, setFailed] = useState<string | null>(null);

  useEffect(() => {
    let cancelled = false;
    const styles = getComputedStyle(document.documentElement);
    const spec: BarChartSpec = {
      labels,
      stacked,
      horizontal,
      series: series.map((s) => ({
        label: s.label,
        values: s.values,
        color: styles.getPropertyValue(s.color).trim() || "#4f6d8f",
      })),
      textColor: styles.getPropertyValue("--text-muted").trim() || "#555",
      gridColor: styles.getPropertyValue("--border").trim() || "#ddd",
    };
    if (chart.current) {
      chart.current.update(spec);
      return;
    }
    import("../charts.ts")
      .then(({ drawBarChart }) => {
        if (cancelled || !canvas.current) return;
        chart.current = drawBarChart(canvas.current, spec);
      })
      .catch((e: unknown) => setFailed(e instanceof Error ? e.message : String(e)));
    return () => {
      cancelled = true;
    };
  }, [JSON.stringify({ labels, series, stacked, horizontal })]);

  useEffect(() => () => chart.current?.destroy(), []);

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {failed ? (
        <p class="muted">The chart could not be drawn ({failed}); the table below has the same numbers.</p>
      ) : (
        <div class={horizontal ? "chart-box chart-box-h" : "chart-box"}>
          <canvas ref={canvas} role="img" aria-label={`${title}: ${summary}`} />
        </div>
      )}
      <details class="chart-table">
        <summary>Show as table</summary>
        <div class="table-scroll" tabIndex={0} role="region" aria-label={`${title} (table)`}>
          <table>
            <caption>{tableCaption ?? title}</caption>
            <thead>
              <tr>
                <th scope="col">{horizontal ? "Status" : "Day"}</th>
                {series.map((s) => (
                  <th scope="col" key={s.label}>
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {labels.map((l, i) => (
                <tr key={l}>
                  <th scope="row">{l}</th>
                  {series.map((s) => (
                    <td key={s.label} class="num">
                      {s.values[i] ?? 0}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
