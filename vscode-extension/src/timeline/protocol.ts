// What the timeline panel and its webview say to each other.
import type { Timeline } from "@pi-pruner/core";

/** Panel → webview: the timeline to draw (again, after Pi wrote more). */
export interface TimelineMessage {
  type: "timeline";
  title: string;
  timeline: Timeline;
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
