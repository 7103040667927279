/// <reference lib="dom" />
// The timeline's page in the webview: draws the points the panel posts with uPlot (context tokens
// raw and sent on the left axis, each request's cost on the right, marks as vertical lines), shows
// the numbers of the request under the pointer, and asks the panel to open the one clicked.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./timeline-view.css";
import type { Timeline, TimelineMark, TimelinePoint } from "@pi-pruner/core";
import type { TimelineMessage, WebviewMessage } from "../protocol.ts";
import type { DrawnMessage } from "./drawn.ts";

declare function acquireVsCodeApi(): { postMessage(message: WebviewMessage | DrawnMessage): void };
const vscode = acquireVsCodeApi();

const totalsEl = document.getElementById("totals")!;
const chartEl = document.getElementById("chart")!;
const detailsEl = document.getElementById("details")!;
const marksEl = document.getElementById("marks")!;
let timeline: Timeline | undefined;
let chart: uPlot | undefined;
/** Whether the timeline last posted holds every request of the branch (not a build still under way). */
let complete = false;

/** A theme colour: canvas strokes need the value, not the CSS variable. */
function themeColour(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

const tokens = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(Math.round(n)));
const dollars = (n: number): string => {
  if (n < 0) return `−${dollars(-n)}`;
  return n >= 1 ? `$${n.toFixed(2)}` : n >= 0.01 ? `$${n.toFixed(3)}` : n >= 0.0001 || n === 0 ? `$${n.toFixed(4)}` : `$${n.toPrecision(2)}`;
};

/**
 * The cost axis from $0 to a little above the dearest request. uPlot's own range puts a flat series
 * on $0–$100, and a range that does not start at $0 makes a small difference look large.
 */
function costRange(points: readonly TimelinePoint[]): [number, number] {
  const top = Math.max(0, ...points.map((p) => p.cost));
  return [0, top > 0 ? top * 1.1 : 0.0001];
}

function text(tag: string, content: string, className?: string): HTMLElement {
  const el = document.createElement(tag);
  el.textContent = content;
  if (className) el.className = className;
  return el;
}

function showTotals(t: Timeline): void {
  const { totals } = t;
  const estimated = totals.estimatedRequests === 0 ? "" : totals.estimatedRequests === totals.requests ? " (estimate)" : ` (${totals.estimatedRequests} of ${totals.requests} estimated)`;
  const figure = (label: string, value: string, note = "") => {
    const el = text("span", `${label} `, "figure");
    el.append(text("b", value));
    if (note) el.append(text("span", note, "note"));
    return el;
  };
  totalsEl.replaceChildren(
    figure("Requests", String(totals.requests)),
    figure("Cost with pruning", dollars(totals.cost), estimated),
    figure("Without pruning", dollars(totals.costWithoutPruning), " (estimate)"),
    figure("Summarizer", dollars(totals.summarizer.cost), ` (${totals.summarizer.calls} call${totals.summarizer.calls === 1 ? "" : "s"})`),
    // Pruning can cost more than it keeps out (rewrites billed as cache writes, the summarizer's calls): said so, not shown as a negative saving.
    totals.saving >= 0 ? figure("Saving", dollars(totals.saving), " (after the summarizer)") : figure("Pruning cost more by", dollars(-totals.saving), " (after the summarizer)"),
  );
}

function marksBefore(t: Timeline, n: number): TimelineMark[] {
  return t.marks.filter((m) => m.beforeRequest === n);
}

function showDetails(point: TimelinePoint | undefined): void {
  if (!point || !timeline) {
    detailsEl.replaceChildren(text("span", "Point at a request to see its numbers; click it to open its model view.", "note"));
    return;
  }
  const lines: HTMLElement[] = [];
  lines.push(text("div", `Request ${point.n}${point.prompt ? ` · ${point.prompt.slice(0, 120)}` : ""}`));
  lines.push(text("div", `Context: ${tokens(point.rawTokens)} tokens raw → ${tokens(point.sentTokens)} sent (${point.rawChars.toLocaleString()} → ${point.sentChars.toLocaleString()} chars)`));
  const u = point.usage;
  if (u) lines.push(text("div", `Provider: input ${u.input.toLocaleString()} · cache read ${u.cacheRead.toLocaleString()} · cache write ${u.cacheWrite.toLocaleString()} · output ${u.output.toLocaleString()}`));
  else {
    const e = point.estimate;
    lines.push(text("div", `Estimate (${point.rules} pricing): input ${e.input.toLocaleString()} · cache read ${e.cacheRead.toLocaleString()} · cache write ${e.cacheWrite.toLocaleString()} · output ${e.output.toLocaleString()}`));
  }
  lines.push(text("div", `Cost ${dollars(point.cost)}${point.costEstimated ? " (estimate)" : ""} · without pruning ${dollars(point.costWithoutPruning)} (estimate)`));
  const marks = marksBefore(timeline, point.n);
  if (marks.length) lines.push(text("div", `Before it: ${marks.map((m) => m.label).join("; ")}`, "marks"));
  detailsEl.replaceChildren(...lines);
}

const MARK_NAMES: Record<TimelineMark["kind"], string> = { flush: "flush", chain: "chain compressed", compaction: "Pi compaction", branch: "branch point", rewind: "rewind", shrink: "shrink" };

function markColours(): Record<TimelineMark["kind"], string> {
  return {
    flush: themeColour("--vscode-charts-purple", "#b180d7"),
    chain: themeColour("--vscode-charts-yellow", "#cca700"),
    compaction: themeColour("--vscode-charts-red", "#f14c4c"),
    branch: themeColour("--vscode-charts-lines", "#808080"),
    rewind: themeColour("--vscode-charts-orange", "#d18616"),
    shrink: themeColour("--vscode-charts-orange", "#d18616"),
  };
}

/** What the dashed lines stand for, with how many of each. */
function showMarkLegend(t: Timeline): void {
  const colours = markColours();
  const counts = new Map<TimelineMark["kind"], number>();
  for (const mark of t.marks) counts.set(mark.kind, (counts.get(mark.kind) ?? 0) + 1);
  const items: HTMLElement[] = [];
  for (const [kind, count] of counts) {
    const item = text("span", `┆ ${MARK_NAMES[kind]} ×${count}`, "mark");
    item.style.color = colours[kind];
    items.push(item);
  }
  marksEl.replaceChildren(...(items.length ? [text("span", "Marks:", "note"), ...items] : []));
}

/** After uPlot's draw of a complete timeline: the canvas holds every point (the editor benchmark waits for it). */
function noteDrawn(u: uPlot): void {
  // The cost axis as drawn (the axis itself is on the canvas): the UI check reads it.
  const { min, max } = u.scales.dollars ?? {};
  if (min != null && max != null) document.body.dataset.costAxis = `${min} ${max}`;
  if (!complete || !timeline || document.body.dataset.drawn === String(timeline.points.length)) return;
  document.body.dataset.drawn = String(timeline.points.length);
  vscode.postMessage({ type: "drawn", requests: timeline.points.length });
}

/** Draws each mark as a dashed vertical line just before the request that first saw it. */
function drawMarks(u: uPlot): void {
  if (!timeline) return;
  const colours = markColours();
  const ctx = u.ctx;
  ctx.save();
  ctx.setLineDash([4, 4]);
  ctx.lineWidth = devicePixelRatio;
  for (const mark of timeline.marks) {
    const x = Math.round(u.valToPos(mark.beforeRequest - 0.5, "x", true));
    ctx.strokeStyle = colours[mark.kind];
    ctx.beginPath();
    ctx.moveTo(x, u.bbox.top);
    ctx.lineTo(x, u.bbox.top + u.bbox.height);
    ctx.stroke();
  }
  ctx.restore();
}

const seriesOf = (points: readonly TimelinePoint[]): uPlot.AlignedData => [points.map((p) => p.n), points.map((p) => p.rawTokens), points.map((p) => p.sentTokens), points.map((p) => p.cost)];

/** Draws the timeline: a new chart, or (`again`, while a build streams in) the same chart with the new points. */
function draw(again = false): void {
  if (again && chart && timeline && timeline.points.length > 0) {
    chart.setData(seriesOf(timeline.points));
    return;
  }
  chart?.destroy();
  chart = undefined;
  if (!timeline || timeline.points.length === 0) {
    chartEl.replaceChildren(text("p", "This branch sent no request yet.", "note"));
    showDetails(undefined);
    return;
  }
  chartEl.replaceChildren();
  const points = timeline.points;
  const foreground = themeColour("--vscode-foreground", "#ccc");
  const grid = themeColour("--vscode-editorWidget-border", "rgba(128,128,128,0.3)");
  const axis = (scale: string, side: number, format: (v: number) => string): uPlot.Axis => ({
    scale,
    side,
    size: 64,
    stroke: foreground,
    grid: { stroke: grid, width: 1, show: side === 3 },
    ticks: { stroke: grid },
    values: (_u, values) => values.map(format),
  });
  const options: uPlot.Options = {
    width: Math.max(320, chartEl.clientWidth || document.body.clientWidth - 32),
    height: Math.max(220, Math.min(480, window.innerHeight - 180)),
    scales: { x: { time: false }, tokens: { auto: true }, dollars: { auto: true, range: () => costRange(timeline?.points ?? []) } },
    axes: [
      // Requests are whole numbers.
      { stroke: foreground, grid: { show: false }, ticks: { stroke: grid }, label: "request", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] },
      axis("tokens", 3, tokens),
      axis("dollars", 1, dollars),
    ],
    series: [
      { label: "request" },
      { label: "raw tokens", scale: "tokens", stroke: themeColour("--vscode-charts-orange", "#d18616"), width: 2, value: (_u, v) => (v == null ? "" : tokens(v)) },
      { label: "sent tokens", scale: "tokens", stroke: themeColour("--vscode-charts-blue", "#3794ff"), width: 2, value: (_u, v) => (v == null ? "" : tokens(v)) },
      { label: "cost", scale: "dollars", stroke: themeColour("--vscode-charts-green", "#89d185"), width: 1.5, dash: [6, 3], value: (_u, v) => (v == null ? "" : dollars(v)) },
    ],
    cursor: { points: { size: 8 } },
    hooks: {
      draw: [drawMarks, noteDrawn],
      setCursor: [(u) => showDetails(u.cursor.idx == null ? undefined : timeline?.points[u.cursor.idx])],
    },
  };
  chart = new uPlot(options, seriesOf(points), chartEl);
  chart.over.addEventListener("click", () => {
    const idx = chart?.cursor.idx;
    const point = idx == null ? undefined : timeline?.points[idx];
    if (point) vscode.postMessage({ type: "open", request: point.n });
  });
  showDetails(undefined);
}

window.addEventListener("message", (event: MessageEvent<TimelineMessage>) => {
  if (event.data?.type !== "timeline") return;
  timeline = event.data.timeline;
  complete = timeline.points.length >= event.data.total;
  // Drawn again below: not drawn until uPlot says so.
  delete document.body.dataset.drawn;
  document.title = event.data.title;
  showTotals(timeline);
  const building = !complete;
  if (building) totalsEl.append(text("span", `building: ${timeline.points.length} of ${event.data.total} requests so far`, "note"));
  showMarkLegend(timeline);
  // The points of a build under way, or Pi's new requests: the chart takes them without being made again.
  draw(true);
  // Set once every request is drawn (the UI check waits for it).
  if (building) delete document.body.dataset.requests;
  else document.body.dataset.requests = String(timeline.points.length);
});
window.addEventListener("resize", () => chart?.setSize({ width: Math.max(320, chartEl.clientWidth), height: chart.height }));
// The theme changed: the canvas colours are read again.
new MutationObserver(() => draw()).observe(document.body, { attributes: true, attributeFilter: ["class"] });

vscode.postMessage({ type: "ready" });
