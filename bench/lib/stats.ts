// Small statistics and timing helpers. Every figure the benchmark reports is a median of repeated
// runs with its min and max; comparisons are ratios of figures measured in the same run.
import { performance } from "node:perf_hooks";

export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

export function spread(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), runs: values.length };
}

/** Milliseconds of one synchronous call. */
export function timeMs(fn: () => unknown): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/**
 * CPU time of this thread in ms (falls back to the process). The kernel accounts it in scheduler
 * ticks, so it is only good over many calls: a batch's total divided by its calls is the mean CPU
 * cost of one call, which — unlike wall time — does not grow when other processes take the CPU.
 */
export function threadCpuMs(): number {
  const p = process as unknown as { threadCpuUsage?: () => { user: number; system: number } };
  const u = p.threadCpuUsage ? p.threadCpuUsage() : process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export interface CallSample extends Array<number> {
  /** Mean CPU time per call over the timed calls (ms). */
  cpuPerCall?: number;
}

/** Per-call wall timings of `calls` calls after `warmup` untimed ones, with the batch's mean CPU time per call. */
export function sampleCalls(fn: (i: number) => unknown, calls: number, warmup: number): CallSample {
  for (let i = 0; i < warmup; i++) fn(i);
  const out: CallSample = new Array<number>(calls);
  const c0 = threadCpuMs();
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    fn(i);
    out[i] = performance.now() - t0;
  }
  out.cpuPerCall = (threadCpuMs() - c0) / calls;
  return out;
}

/** Least-squares fit y = a + b·x and its coefficient of determination. */
export function linearFit(xs: readonly number[], ys: readonly number[]): { intercept: number; slope: number; r2: number } {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
    syy += (ys[i]! - my) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const intercept = my - slope * mx;
  const r2 = syy === 0 ? 1 : (sxy * sxy) / (sxx * syy);
  return { intercept, slope, r2 };
}

export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Runs a forced GC when the process was started with --expose-gc. */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) gc();
}
