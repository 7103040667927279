// What the timeline says about the request under the pointer, line by line: shared by the page,
// which shows it, and the tests, which read it without a browser. No DOM and no Node here.
import type { TimelineMark } from "@pi-pruner/core";
import type { RequestRow } from "../protocol.ts";

export const formatTokens = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(Math.round(n)));

export const formatDollars = (n: number): string => {
  if (n < 0) return `−${formatDollars(-n)}`;
  return n >= 1 ? `$${n.toFixed(2)}` : n >= 0.01 ? `$${n.toFixed(3)}` : n >= 0.0001 || n === 0 ? `$${n.toFixed(4)}` : `$${n.toPrecision(2)}`;
};

/** Whole numbers with thousands separators, the same in the host and in the page. */
const count = (n: number) => Math.round(n).toLocaleString("en-US");

/** The tokens line of a request: its bar's read / written / uncached and its output, said to be an estimate where it is one. */
function barLine(row: RequestRow): string {
  const figures = `read ${count(row.read)} · written ${count(row.written)} · uncached ${count(row.uncached)} · output ${count(row.output)} tokens`;
  return row.estimated ? `Tokens ${figures} (estimate, ${row.rules} pricing: the answer carries no usage)` : `Tokens ${figures} (the provider's usage)`;
}

/** Why a request rewrote the cache; undefined when it did not. */
export function causeLine(bar: Pick<RequestRow, "rewritten" | "added" | "cause">): string | undefined {
  if (bar.rewritten === 0) return undefined;
  return `Rewrote ${count(bar.rewritten)} tokens beyond the ${count(bar.added)} added: ${bar.cause ?? "no cause found"}`;
}

/** The lines shown for a request: its prompt, its context, its tokens (the bar's figures), its cost, why it rewrote, and the marks before it. */
export function requestDetails(row: RequestRow, marks: readonly TimelineMark[]): string[] {
  const lines: string[] = [];
  lines.push(`Request ${row.n}${row.prompt ? ` · ${row.prompt.slice(0, 120)}` : ""}`);
  lines.push(`Context: ${formatTokens(row.rawTokens)} tokens raw → ${formatTokens(row.sentTokens)} sent (${count(row.rawChars)} → ${count(row.sentChars)} chars)`);
  lines.push(barLine(row));
  lines.push(`Cost ${formatDollars(row.cost)}${row.costEstimated ? " (estimate)" : ""} · without pruning ${formatDollars(row.costWithoutPruning)} (estimate)`);
  const cause = causeLine(row);
  if (cause) lines.push(cause);
  const before = marks.filter((m) => m.beforeRequest === row.n);
  if (before.length) lines.push(`Before it: ${before.map((m) => m.label).join("; ")}`);
  return lines;
}
