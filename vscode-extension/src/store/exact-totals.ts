// After the fast append path, a session's model characters are an estimate; the exact figure is
// recomputed by a full build soon after. At most every EXACT_TOTALS_DELAY_MS, and taking at most
// EXACT_TOTALS_SHARE of the time: a session whose full build is slow is recomputed less often while
// Pi writes to it.

const EXACT_TOTALS_DELAY_MS = 1000;
const EXACT_TOTALS_SHARE = 0.1;

export class ExactTotalsScheduler {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  /** Runs `recompute` once for `path` after the delay its last full build calls for; until then, further calls wait for the same run. */
  schedule(path: string, lastBuildMs: number, recompute: () => void): void {
    if (this.timers.has(path)) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(path);
        recompute();
      },
      Math.max(EXACT_TOTALS_DELAY_MS, lastBuildMs / EXACT_TOTALS_SHARE),
    );
    this.timers.set(path, timer);
  }

  /** Drops every run not yet due. */
  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
