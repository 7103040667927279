// What the timeline panel and its webview say to each other.
import type { RewriteCauseKind, Timeline } from "@pi-pruner/core";

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

/** Panel → webview: the timeline to draw (again, after Pi wrote more). */
export interface TimelineMessage {
  type: "timeline";
  /** Grows with every message a panel builds: the page skips one it has already drawn. */
  version: number;
  title: string;
  timeline: Timeline;
  /** One per point, in the same order. */
  bars: RequestBar[];
  /** Requests on the branch; more than the timeline's points while it is still being built. */
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
