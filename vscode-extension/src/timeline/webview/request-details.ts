// What the timeline says about the request under the pointer, line by line: shared by the page,
// which shows it, and the tests, which read it without a browser. No DOM and no Node here.
import type { TimelineMark, TimelinePoint } from "@pi-pruner/core";
import type { RequestBar } from "../protocol.ts";

export const formatTokens = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(Math.round(n)));

export const formatDollars = (n: number): string => {
  if (n < 0) return `−${formatDollars(-n)}`;
  return n >= 1 ? `$${n.toFixed(2)}` : n >= 0.01 ? `$${n.toFixed(3)}` : n >= 0.0001 || n === 0 ? `$${n.toFixed(4)}` : `$${n.toPrecision(2)}`;
};

/** Whole numbers with thousands separators, the same in the host and in the page. */
const count = (n: number) => Math.round(n).toLocaleString("en-US");

/** The tokens line of a request: its bar's read / written / uncached and its output, said to be an estimate where it is one. */
function barLine(point: TimelinePoint, bar: RequestBar): string {
  const output = point.usage?.output ?? point.estimate.output;
  const figures = `read ${count(bar.read)} · written ${count(bar.written)} · uncached ${count(bar.uncached)} · output ${count(output)} tokens`;
  return bar.estimated ? `Tokens ${figures} (estimate, ${point.rules} pricing: the answer carries no usage)` : `Tokens ${figures} (the provider's usage)`;
}

/** Why a bar's request rewrote the cache; undefined when it did not. */
export function causeLine(bar: RequestBar): string | undefined {
  if (bar.rewritten === 0) return undefined;
  return `Rewrote ${count(bar.rewritten)} tokens beyond the ${count(bar.added)} added: ${bar.cause ?? "no cause found"}`;
}

/** The lines shown for a request: its prompt, its context, its tokens (the bar's figures), its cost, why it rewrote, and the marks before it. */
export function requestDetails(point: TimelinePoint, bar: RequestBar, marks: readonly TimelineMark[]): string[] {
  const lines: string[] = [];
  lines.push(`Request ${point.n}${point.prompt ? ` · ${point.prompt.slice(0, 120)}` : ""}`);
  lines.push(`Context: ${formatTokens(point.rawTokens)} tokens raw → ${formatTokens(point.sentTokens)} sent (${count(point.rawChars)} → ${count(point.sentChars)} chars)`);
  lines.push(barLine(point, bar));
  lines.push(`Cost ${formatDollars(point.cost)}${point.costEstimated ? " (estimate)" : ""} · without pruning ${formatDollars(point.costWithoutPruning)} (estimate)`);
  const cause = causeLine(bar);
  if (cause) lines.push(cause);
  const before = marks.filter((m) => m.beforeRequest === point.n);
  if (before.length) lines.push(`Before it: ${before.map((m) => m.label).join("; ")}`);
  return lines;
}
