// Chart.js, tree-shaken to what the dashboard draws: bar charts only. Loaded on first use (a
// separate chunk), so the sign-in and verify views never download it.
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

export interface BarChartSpec {
  labels: string[];
  series: Array<{ label: string; values: number[]; color: string }>;
  stacked: boolean;
  horizontal: boolean;
  textColor: string;
  gridColor: string;
}

export interface ChartHandle {
  update(spec: BarChartSpec): void;
  destroy(): void;
}

function datasetsOf(spec: BarChartSpec) {
  return spec.series.map((s) => ({
    label: s.label,
    data: s.values,
    backgroundColor: s.color,
    borderRadius: 2,
    maxBarThickness: 48,
  }));
}

export function drawBarChart(canvas: HTMLCanvasElement, spec: BarChartSpec): ChartHandle {
  const axis = (stacked: boolean, isValueAxis: boolean) => ({
    stacked,
    beginAtZero: true,
    ticks: { color: spec.textColor, ...(isValueAxis ? { precision: 0 } : {}) },
    grid: { color: spec.gridColor, display: isValueAxis },
  });
  const chart = new Chart(canvas, {
    type: "bar",
    data: { labels: spec.labels, datasets: datasetsOf(spec) },
    options: {
      indexAxis: spec.horizontal ? "y" : "x",
      responsive: true,
      maintainAspectRatio: false,
      // No entry animation: a screenshot taken mid-animation showed bars over the wrong days, and
      // a polled chart re-animating every few seconds reads as data moving.
      animation: false,
      scales: {
        x: axis(spec.stacked, !spec.horizontal ? false : true),
        y: axis(spec.stacked, !spec.horizontal),
      },
      plugins: {
        legend: { display: spec.series.length > 1, labels: { color: spec.textColor } },
        tooltip: { enabled: true },
      },
    },
  });
  return {
    update(next) {
      chart.data.labels = next.labels;
      chart.data.datasets = datasetsOf(next);
      chart.update();
    },
    destroy() {
      chart.destroy();
    },
  };
}
