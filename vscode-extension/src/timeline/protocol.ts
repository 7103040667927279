// What the timeline panel and its webview say to each other.
import type { CacheRules, RewriteCauseKind, Timeline, TimelineMark, TimelinePoint } from "@pi-pruner/core";

/**
 * One request's stacked bar: the tokens read from the cache, written to it and sent uncached (core's
 * request cost), and, where the request rewrote the cache, why.
 */
export interface RequestBar {
  n: number;
  read: number;
  written: number;
  uncached: number;
  /** The meter's estimate: the answer carries no usage. */
  estimated: boolean;
  /** Tokens new since the previous request. */
  added: number;
  /** Tokens of the old prefix sent again; 0 when the request did not rewrite. */
  rewritten: number;
  /** Why it rewrote, in a person's words ("no cause found" when nothing explains it); absent when it did not. */
  cause?: string;
  /** The first cause's kind (the mark's colour); absent when it did not rewrite or no cause was found. */
  causeKind?: RewriteCauseKind;
}

/** What the panel last built of a session's timeline: every point and bar (the tests read it). */
export interface TimelineData {
  /** Grows with every build posted: the page skips one it has already drawn. */
  version: number;
  title: string;
  timeline: Timeline;
  /** One per point, in the same order. */
  bars: RequestBar[];
  /** Requests on the branch; more than the timeline's points while it is still being built. */
  total: number;
}

/** What the page shows of one request: its bar, with the chart's other figures and the hover's lines. */
export interface RequestRow extends RequestBar {
  prompt?: string;
  rawChars: number;
  rawTokens: number;
  sentChars: number;
  sentTokens: number;
  rules: CacheRules;
  /** The provider's output tokens, else the estimate's. */
  output: number;
  cost: number;
  costEstimated: boolean;
  costWithoutPruning: number;
}

const ROW_KEYS = ["n", "prompt", "rawChars", "rawTokens", "sentChars", "sentTokens", "rules", "output", "cost", "costEstimated", "costWithoutPruning", "read", "written", "uncached", "estimated", "added", "rewritten", "cause", "causeKind"] as const satisfies readonly (keyof RequestRow)[];

/**
 * The rows as one array per field (null where a row has none): a long session's thousand requests
 * cross to the page without their field names repeated, and the chart takes its series as they come.
 */
export type RequestColumns = { [K in keyof RequestRow]-?: (RequestRow[K] | null)[] };

export function requestRow(point: TimelinePoint, bar: RequestBar): RequestRow {
  const row: RequestRow = {
    n: point.n,
    rawChars: point.rawChars,
    rawTokens: point.rawTokens,
    sentChars: point.sentChars,
    sentTokens: point.sentTokens,
    rules: point.rules,
    output: point.usage?.output ?? point.estimate.output,
    cost: point.cost,
    costEstimated: point.costEstimated,
    costWithoutPruning: point.costWithoutPruning,
    read: bar.read,
    written: bar.written,
    uncached: bar.uncached,
    estimated: bar.estimated,
    added: bar.added,
    rewritten: bar.rewritten,
  };
  if (point.prompt !== undefined) row.prompt = point.prompt;
  if (bar.cause !== undefined) row.cause = bar.cause;
  if (bar.causeKind !== undefined) row.causeKind = bar.causeKind;
  return row;
}

export function columnsOf(rows: readonly RequestRow[]): RequestColumns {
  const columns = {} as Record<keyof RequestRow, unknown[]>;
  for (const key of ROW_KEYS) columns[key] = rows.map((row) => row[key] ?? null);
  return columns as RequestColumns;
}

/** The row at `index` of the columns. */
export function rowAt(columns: RequestColumns, index: number): RequestRow {
  const row = {} as Record<keyof RequestRow, unknown>;
  for (const key of ROW_KEYS) {
    const value = columns[key][index];
    if (value !== null && value !== undefined) row[key] = value;
  }
  return row as unknown as RequestRow;
}

/** Panel → webview: the timeline to draw (again, after Pi wrote more). */
export interface TimelineMessage {
  type: "timeline";
  version: number;
  title: string;
  totals: Timeline["totals"];
  marks: TimelineMark[];
  /** One entry per request built so far. */
  requests: RequestColumns;
  /** Requests on the branch; more than those posted while the build is under way. */
  total: number;
}

/** Webview → panel: the page loaded and wants its data; or a point was clicked. */
export type WebviewMessage = { type: "ready" } | { type: "open"; request: number };

export function isWebviewMessage(value: unknown): value is WebviewMessage {
  if (!value || typeof value !== "object") return false;
  const message = value as { type?: unknown; request?: unknown };
  if (message.type === "ready") return true;
  return message.type === "open" && typeof message.request === "number" && Number.isInteger(message.request) && message.request >= 1;
}
