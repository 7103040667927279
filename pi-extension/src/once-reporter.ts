// One report per distinct problem per session: a broken summarizer or a bad setting speaks once.
/** Reports each distinct problem once per session, so a broken summarizer cannot flood the screen. */
export class OnceReporter {
  private seen = new Set<string>();
  private readonly sink: (message: string, level: "info" | "warning" | "error") => void;
  constructor(sink: (message: string, level: "info" | "warning" | "error") => void) {
    this.sink = sink;
  }
  report(key: string, message: string, level: "info" | "warning" | "error" = "warning"): void {
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
