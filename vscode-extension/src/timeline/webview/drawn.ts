// Webview → panel, once uPlot has drawn a complete timeline: every request of the branch is on
// the canvas (and the page's body carries `data-drawn` with their count). The panel has no use
// for it; the editor benchmark waits for it before it closes the panel. `sinceLoadMs`: how long
// after the page finished loading it drew (also the body's `data-since-load-ms`).
export interface DrawnMessage {
  type: "drawn";
  requests: number;
  sinceLoadMs: number;
}

export function isDrawnMessage(value: unknown): value is DrawnMessage {
  const message = value as { type?: unknown; requests?: unknown } | null;
  return !!message && typeof message === "object" && message.type === "drawn" && typeof message.requests === "number";
}
