/// <reference lib="dom" />
// The timeline's page in the webview: draws the points the panel posts with uPlot (context tokens
// raw and sent on the left axis over each request's bar of tokens read from the cache, written to
// it and sent uncached; each request's cost on the right; marks as vertical lines, and a mark over
// each request that rewrote the cache), shows the numbers of the request under the pointer with
// why it rewrote, and asks the panel to open the one clicked.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./timeline-view.css";
import type { TimelineMark } from "@pi-pruner/core";
import { rowAt, type RequestColumns, type RequestRow, type TimelineMessage, type WebviewMessage } from "../protocol.ts";
import { causeLine, formatDollars as dollars, formatTokens as tokens, requestDetails } from "./request-details.ts";
import type { DrawnMessage } from "./drawn.ts";

declare function acquireVsCodeApi(): { postMessage(message: WebviewMessage | DrawnMessage): void };
const vscode = acquireVsCodeApi();
/** When the page finished loading (the script's start until then): the draw is timed from it. */
let loadedAt = performance.now();
window.addEventListener("load", () => (loadedAt = performance.now()));

const totalsEl = document.getElementById("totals")!;
const chartEl = document.getElementById("chart")!;
const detailsEl = document.getElementById("details")!;
const marksEl = document.getElementById("marks")!;
/** The message drawn: the totals, the marks, and each request's figures as columns. */
let timeline: TimelineMessage | undefined;
/** The version of the message drawn (the panel may post it again when the page asks). */
let version: number | undefined;
let chart: uPlot | undefined;
/** Whether the timeline last posted holds every request of the branch (not a build still under way). */
let complete = false;

/** A theme colour: canvas strokes need the value, not the CSS variable. */
function themeColour(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}


/**
 * The cost axis from $0 to a little above the dearest request. uPlot's own range puts a flat series
 * on $0–$100, and a range that does not start at $0 makes a small difference look large.
 */
function costRange(costs: readonly (number | null)[]): [number, number] {
  let top = 0;
  for (const cost of costs) if (cost !== null && cost > top) top = cost;
  return [0, top > 0 ? top * 1.1 : 0.0001];
}

function text(tag: string, content: string, className?: string): HTMLElement {
  const el = document.createElement(tag);
  el.textContent = content;
  if (className) el.className = className;
  return el;
}

function showTotals(t: TimelineMessage): void {
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

/** Requests in the message drawn. */
const requestCount = () => timeline?.requests.n.length ?? 0;

function showDetails(index: number | undefined): void {
  if (index === undefined || !timeline || index >= requestCount()) {
    detailsEl.replaceChildren(text("span", "Point at a request to see its numbers and why it rewrote the cache; click it to open its model view.", "note"));
    delete detailsEl.dataset.request;
    return;
  }
  const row = rowAt(timeline.requests, index);
  const cause = causeLine(row);
  detailsEl.replaceChildren(...requestDetails(row, timeline.marks).map((line) => text("div", line, line === cause ? "cause" : line.startsWith("Before it:") ? "marks" : undefined)));
  detailsEl.dataset.request = String(row.n);
}

const MARK_NAMES: Record<TimelineMark["kind"], string> = { flush: "flush", chain: "chain compressed", compaction: "Pi compaction", branch: "branch point", rewind: "rewind", shrink: "shrink" };

const BAR_PARTS = [
  { key: "read", label: "read from the cache", colour: () => themeColour("--vscode-terminal-ansiCyan", "#11a8cd") },
  { key: "written", label: "written to it", colour: () => themeColour("--vscode-terminal-ansiMagenta", "#bc3fbc") },
  { key: "uncached", label: "sent uncached", colour: () => themeColour("--vscode-terminal-ansiYellow", "#e5e510") },
] as const;

/** A rewrite's mark takes the colour of its cause's dashed line where it has one. */
function causeColour(kind: RequestRow["causeKind"] | null, marks: Record<TimelineMark["kind"], string>): string {
  return kind === "flush" || kind === "chain" || kind === "compaction" || kind === "rewind" || kind === "shrink" ? marks[kind] : themeColour("--vscode-charts-foreground", "#cccccc");
}

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
function showMarkLegend(t: TimelineMessage): void {
  const colours = markColours();
  const counts = new Map<TimelineMark["kind"], number>();
  for (const mark of t.marks) counts.set(mark.kind, (counts.get(mark.kind) ?? 0) + 1);
  const items: HTMLElement[] = [];
  for (const [kind, count] of counts) {
    const item = text("span", `┆ ${MARK_NAMES[kind]} ×${count}`, "mark");
    item.style.color = colours[kind];
    items.push(item);
  }
  const legend: HTMLElement[] = [text("span", "Bars:", "note")];
  for (const part of BAR_PARTS) {
    const item = text("span", `■ ${part.label}`, "bar");
    item.style.color = part.colour();
    legend.push(item);
  }
  const estimated = t.requests.estimated.filter((e) => e).length;
  legend.push(text("span", estimated ? `(tokens, left axis; paler: the meter's estimate, ${estimated} of ${t.requests.n.length} answers carry no usage)` : "(tokens, left axis; the provider's usage)", "note"));
  const rewrites = t.requests.rewritten.filter((r) => r !== null && r > 0).length;
  if (rewrites) legend.push(text("span", `▼ rewrote the cache ×${rewrites} (point at it for the cause)`, "cause-legend"));
  if (items.length) legend.push(text("span", "Marks:", "note"), ...items);
  marksEl.replaceChildren(...legend);
}

/** After uPlot's draw of a complete timeline: the canvas holds every point (the editor benchmark waits for it). */
function noteDrawn(u: uPlot): void {
  // The cost axis as drawn (the axis itself is on the canvas): the UI check reads it.
  const { min, max } = u.scales.dollars ?? {};
  if (min != null && max != null) document.body.dataset.costAxis = `${min} ${max}`;
  const drawn = requestCount();
  if (!complete || !timeline || document.body.dataset.drawn === String(drawn)) return;
  const sinceLoadMs = performance.now() - loadedAt;
  document.body.dataset.drawn = String(drawn);
  document.body.dataset.sinceLoadMs = sinceLoadMs.toFixed(1);
  vscode.postMessage({ type: "drawn", requests: drawn, sinceLoadMs });
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

/** The top of a request's bar, in tokens. */
const barTop = (r: RequestColumns, i: number) => r.read[i]! + r.written[i]! + r.uncached[i]!;

/** Draws each request's bar, stacked from the axis: read, written, uncached; paler where it is an estimate. */
function drawBars(u: uPlot): void {
  if (!timeline || requestCount() === 0) return;
  const r = timeline.requests;
  const colours = BAR_PARTS.map((part) => part.colour());
  const ctx = u.ctx;
  const step = Math.abs(u.valToPos(2, "x", true) - u.valToPos(1, "x", true));
  const width = Math.max(1, Math.min(step * 0.7, 24 * devicePixelRatio));
  const base = u.valToPos(0, "tokens", true);
  ctx.save();
  for (let i = 0; i < r.n.length; i++) {
    const x = u.valToPos(r.n[i]!, "x", true) - width / 2;
    const estimated = r.estimated[i];
    ctx.globalAlpha = estimated ? 0.25 : 0.55;
    let from = 0;
    BAR_PARTS.forEach((part, k) => {
      const to = from + r[part.key][i]!;
      const top = u.valToPos(to, "tokens", true);
      ctx.fillStyle = colours[k]!;
      ctx.fillRect(x, top, width, u.valToPos(from, "tokens", true) - top);
      from = to;
    });
    if (estimated) {
      // An estimate's bar is outlined in dashes as well as paler.
      ctx.globalAlpha = 0.8;
      ctx.setLineDash([2 * devicePixelRatio, 2 * devicePixelRatio]);
      ctx.strokeStyle = colours[2]!;
      ctx.strokeRect(x, u.valToPos(from, "tokens", true), width, base - u.valToPos(from, "tokens", true));
      ctx.setLineDash([]);
    }
  }
  ctx.restore();
}

/**
 * Places a mark over each request that rewrote the cache, just above its bar. They are elements on
 * the chart's overlay, not strokes on its canvas, so a person (and the UI check) can find them;
 * pointing at one moves the cursor to its request, whose details say why.
 */
function placeCauseMarks(u: uPlot): void {
  const colours = markColours();
  const marks: HTMLElement[] = [];
  const r = timeline?.requests;
  for (let i = 0; r && i < r.n.length; i++) {
    if (!r.rewritten[i]) continue;
    const mark = text("div", "▼", "cause-mark");
    mark.dataset.request = String(r.n[i]);
    mark.style.color = causeColour(r.causeKind[i] ?? null, colours);
    mark.style.left = `${u.valToPos(r.n[i]!, "x")}px`;
    mark.style.top = `${Math.max(0, u.valToPos(barTop(r, i), "tokens") - 16)}px`;
    marks.push(mark);
  }
  for (const old of u.over.querySelectorAll(".cause-mark")) old.remove();
  u.over.append(...marks);
}

const seriesOf = (r: RequestColumns): uPlot.AlignedData => [r.n as number[], r.rawTokens as number[], r.sentTokens as number[], r.cost as number[]];

/** The highest bar, in tokens. */
function highestBar(r: RequestColumns): number {
  let top = 0;
  for (let i = 0; i < r.n.length; i++) top = Math.max(top, barTop(r, i));
  return top;
}

/** Draws the timeline: a new chart, or (`again`, while a build streams in) the same chart with the new points. */
function draw(again = false): void {
  if (again && chart && timeline && requestCount() > 0) {
    chart.setData(seriesOf(timeline.requests));
    return;
  }
  chart?.destroy();
  chart = undefined;
  if (!timeline || requestCount() === 0) {
    chartEl.replaceChildren(text("p", "This branch sent no request yet.", "note"));
    showDetails(undefined);
    return;
  }
  chartEl.replaceChildren();
  const requests = timeline.requests;
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
    // Tokens from 0, up to the higher of the lines and the bars (the provider counts the system prompt and tools, which the lines do not).
    scales: { x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] }, tokens: { auto: true, range: (_u, _min, max) => [0, Math.max(max, timeline ? highestBar(timeline.requests) : 0, 1) * 1.08] }, dollars: { auto: true, range: () => costRange(timeline?.requests.cost ?? []) } },
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
      drawAxes: [drawBars],
      draw: [drawMarks, placeCauseMarks, noteDrawn],
      setCursor: [(u) => showDetails(u.cursor.idx ?? undefined)],
    },
  };
  chart = new uPlot(options, seriesOf(requests), chartEl);
  chart.over.addEventListener("click", () => {
    const idx = chart?.cursor.idx;
    const n = idx == null ? undefined : timeline?.requests.n[idx];
    if (n != null) vscode.postMessage({ type: "open", request: n });
  });
  showDetails(undefined);
}

window.addEventListener("message", (event: MessageEvent<TimelineMessage>) => {
  if (event.data?.type !== "timeline" || event.data.version === version) return;
  version = event.data.version;
  timeline = event.data;
  complete = requestCount() >= event.data.total;
  // Drawn again below: not drawn until uPlot says so.
  delete document.body.dataset.drawn;
  document.title = event.data.title;
  showTotals(timeline);
  const building = !complete;
  if (building) totalsEl.append(text("span", `building: ${requestCount()} of ${event.data.total} requests so far`, "note"));
  showMarkLegend(timeline);
  // The points of a build under way, or Pi's new requests: the chart takes them without being made again.
  draw(true);
  // Set once every request is drawn (the UI check waits for it).
  if (building) delete document.body.dataset.requests;
  else document.body.dataset.requests = String(requestCount());
});
window.addEventListener("resize", () => chart?.setSize({ width: Math.max(320, chartEl.clientWidth), height: chart.height }));
// The theme changed: the canvas colours are read again.
new MutationObserver(() => draw()).observe(document.body, { attributes: true, attributeFilter: ["class"] });

vscode.postMessage({ type: "ready" });
