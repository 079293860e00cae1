// Per-task bar charts in inline SVG: timings and token counts. A null value is "not
// reported" (or "pending" while the task runs), never drawn as zero.

import { svg } from "./dom.js";

const WIDTH = 230;
const ROW = 20;
const LABEL_WIDTH = 92;
const BAR_MAX = 64;

/** "310 ms", "2.2 s". */
export function formatMs(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

/** "1,234". */
export function formatCount(count) {
  return Math.round(count).toLocaleString();
}

/**
 * A labelled horizontal bar chart.
 * @param {{title: string, testid: string, rows: {key: string, label: string, value: number | null}[],
 *          format: (value: number) => string, missing: string}} options
 */
export function barChart({ title, testid, rows, format, missing }) {
  const height = ROW * rows.length + 22;
  const reported = rows.filter((row) => typeof row.value === "number" && Number.isFinite(row.value));
  const max = Math.max(1, ...reported.map((row) => row.value));
  const description = rows
    .map((row) => `${row.label}: ${typeof row.value === "number" ? format(row.value) : missing}`)
    .join(", ");
  const chart = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${height}`,
    width: WIDTH,
    height,
    role: "img",
    "aria-label": `${title}: ${description}`,
    class: "chart",
    testid,
  });
  chart.append(svg("title", { text: `${title}: ${description}` }));
  chart.append(svg("text", { x: 0, y: 12, class: "chart-title", text: title }));
  rows.forEach((row, index) => {
    const y = 22 + index * ROW;
    const group = svg("g", { "data-key": row.key, class: `chart-row row-${row.key}` });
    group.append(svg("text", { x: 0, y: y + 11, class: "chart-label", text: row.label }));
    if (typeof row.value === "number" && Number.isFinite(row.value)) {
      const width = Math.max(2, (row.value / max) * BAR_MAX);
      group.append(
        svg("rect", { x: LABEL_WIDTH, y: y + 2, width, height: ROW - 8, rx: 3, class: "chart-bar" }),
      );
      group.append(
        svg("text", { x: LABEL_WIDTH + width + 6, y: y + 11, class: "chart-value", text: format(row.value) }),
      );
    } else {
      group.append(svg("text", { x: LABEL_WIDTH, y: y + 11, class: "chart-value missing", text: missing }));
    }
    chart.append(group);
  });
  return chart;
}

/** Timings of one task (ms since the task started). */
export function timingChart(timings, missing) {
  const value = (key) => (timings && typeof timings[key] === "number" ? timings[key] : null);
  return barChart({
    title: "Timings",
    testid: "chart-timings",
    rows: [
      { key: "first_reasoning", label: "first reasoning", value: value("first_reasoning_ms") },
      { key: "first_answer", label: "first answer", value: value("first_answer_ms") },
      { key: "total", label: "total", value: value("total_ms") },
    ],
    format: formatMs,
    missing,
  });
}

/** Token usage of one task. */
export function tokenChart(usage, missing) {
  const value = (key) => (usage && typeof usage[key] === "number" ? usage[key] : null);
  return barChart({
    title: "Tokens",
    testid: "chart-tokens",
    rows: [
      { key: "input", label: "input", value: value("input_tokens") },
      { key: "output", label: "output", value: value("output_tokens") },
      { key: "reasoning", label: "reasoning", value: value("reasoning_tokens") },
    ],
    format: formatCount,
    missing,
  });
}
