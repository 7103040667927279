// One report per distinct problem per session: a broken summarizer or a bad setting speaks once.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

export type ReportLevel = "info" | "warning" | "error";

/** Where a report is shown: the UI of an event's context, and whether Pi has one. */
export type ReportSurface = Pick<ExtensionContext, "ui" | "hasUI">;

/**
 * A report on Pi's UI where it has one (the terminal UI, RPC); where it has none (print and json
 * modes, whose stdout is the answer or JSON lines and whose notify does nothing) a warning or an
 * error goes to stderr, and information stays unsaid.
 */
export function showReport(surface: ReportSurface, message: string, level: ReportLevel): void {
  if (surface.hasUI) surface.ui.notify(message, level);
  else if (level !== "info") process.stderr.write(`${message}\n`);
}

/** Reports each distinct problem once per session, so a broken summarizer cannot flood the screen. */
export class OnceReporter {
  private seen = new Set<string>();
  private readonly sink: (message: string, level: ReportLevel) => void;
  constructor(sink: (message: string, level: ReportLevel) => void) {
    this.sink = sink;
  }
  report(key: string, message: string, level: ReportLevel = "warning"): void {
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.sink(message, level);
  }
  info(message: string): void {
    this.sink(message, "info");
  }
  reset(): void {
    this.seen.clear();
  }
}
