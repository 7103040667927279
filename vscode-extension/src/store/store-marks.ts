// Timing marks of the session store: when the first listing and the first view were ready, how
// long the first parse and the first view build took, and the last append. The benchmarks and the
// live-update tests of the extension host read them.
import { performance } from "node:perf_hooks";

export interface StoreMarks {
  /** performance.now() when the store got its scope. */
  scopeSetAt?: number;
  listedAt?: number;
  /** First session whose reclaim was estimated (its row can show it) after the scope was set. */
  firstEstimateAt?: number;
  /** First session whose view was built after the scope was set. */
  firstViewAt?: number;
  firstViewPath?: string;
  /** How long the first session took to parse, and its view model to build. */
  firstParseMs?: number;
  firstBuildMs?: number;
  /** CPU time of the extension host's thread during the first parse (where Node can tell): wall time minus this is waiting. */
  firstParseCpuMs?: number;
  /** performance.now() when the first parse began. */
  firstParseStartedAt?: number;
  /** CPU time of the thread during the first view model build (synchronous: wall time minus this is the OS running something else). */
  firstBuildCpuMs?: number;
  lastAppend?: { path: string; tailMs: number; updateMs: number; fastPath: boolean; entries: number };
}

/** CPU time of this thread in ms, where Node has process.threadCpuUsage (23.9+). */
function threadCpuMs(): number | undefined {
  const usage = (process as { threadCpuUsage?: () => { user: number; system: number } }).threadCpuUsage?.();
  return usage ? (usage.user + usage.system) / 1000 : undefined;
}

/** Wall and thread CPU time of one piece of work, from when it was made. */
export class Stopwatch {
  readonly startedAt = performance.now();
  private readonly cpuBefore = threadCpuMs();

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  cpuMs(): number | undefined {
    const cpuAfter = threadCpuMs();
    return this.cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - this.cpuBefore : undefined;
  }
}

/**
 * Keeps `marks` as the store works: the first parse and build of a scope's sessions, the last
 * append. The store times its own work with a Stopwatch and reports it here when it is done.
 */
export class StoreTimer {
  readonly marks: StoreMarks = {};

  scopeSet(): void {
    this.marks.scopeSetAt = performance.now();
    this.marks.firstViewAt = undefined;
    this.marks.firstEstimateAt = undefined;
    this.marks.listedAt = undefined;
  }

  estimated(): void {
    this.marks.firstEstimateAt ??= performance.now();
  }

  listed(): void {
    this.marks.listedAt ??= performance.now();
  }

  /** A parse timed by `watch` finished; the first one is recorded. */
  parsed(watch: Stopwatch): void {
    if (this.marks.firstParseMs !== undefined) return;
    this.marks.firstParseStartedAt = watch.startedAt;
    this.marks.firstParseMs = watch.elapsedMs();
    this.marks.firstParseCpuMs = watch.cpuMs();
  }

  /** A view build timed by `watch` finished: returns how long it took; the first one is recorded. */
  built(watch: Stopwatch): number {
    const ms = watch.elapsedMs();
    if (this.marks.firstBuildMs === undefined) {
      this.marks.firstBuildMs = ms;
      this.marks.firstBuildCpuMs = watch.cpuMs();
    }
    return ms;
  }

  /** A session's view is ready to show; the first after the scope was set is recorded. */
  viewShown(path: string): void {
    if (this.marks.firstViewAt !== undefined) return;
    this.marks.firstViewAt = performance.now();
    this.marks.firstViewPath = path;
  }

  appended(lastAppend: NonNullable<StoreMarks["lastAppend"]>): void {
    this.marks.lastAppend = lastAppend;
  }
}
