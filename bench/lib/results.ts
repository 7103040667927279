// The benchmark's output: named figures with units (medians with min and max of repeated runs,
// targets where the issue sets one), chart data, and notes.
import type { Spread } from "./stats.ts";
import { round } from "./stats.ts";

interface Target {
  /** The figure must be at most (`<=`) or at least (`>=`) this value. */
  op: "<=" | ">=";
  value: number;
}

export interface Figure {
  value: number;
  unit: string;
  min?: number;
  max?: number;
  runs?: number;
  target?: Target;
  met?: boolean;
  note?: string;
}

export interface SuiteOutput {
  figures: Record<string, Figure>;
  /** Data behind the charts and tables (free-form per suite). */
  data: Record<string, unknown>;
  notes: string[];
  /** Charts written, by file name → SVG text. */
  charts: Record<string, string>;
  seconds?: number;
  /** The bench process's peak resident memory when the suite ended (MiB): this suite's or an earlier one's, whichever was higher. */
  peakRssMiB?: number;
  skipped?: string;
}

export function newSuite(): SuiteOutput {
  return { figures: {}, data: {}, notes: [], charts: {} };
}

export function figure(value: number, unit: string, extra: Omit<Figure, "value" | "unit"> = {}, digits = 4): Figure {
  const f: Figure = { value: round(value, digits), unit, ...extra };
  if (f.min !== undefined) f.min = round(f.min, digits);
  if (f.max !== undefined) f.max = round(f.max, digits);
  if (f.target) f.met = f.target.op === "<=" ? value <= f.target.value : value >= f.target.value;
  return f;
}

export function spreadFigure(s: Spread, unit: string, extra: Omit<Figure, "value" | "unit" | "min" | "max" | "runs"> = {}, digits = 4): Figure {
  return figure(s.median, unit, { min: s.min, max: s.max, runs: s.runs, ...extra }, digits);
}

/** Everything one bench run writes to bench/results.json, and what docs/benchmarks.md is made from. */
export interface BenchResults {
  generatedAt: string;
  mode: "full" | "quick";
  commit: string;
  sourcesModified: string[];
  machine: Record<string, unknown> & { loadAverageAtStart?: number[]; loadAverageAtEnd?: number[] };
  figures: Record<string, Figure>;
  suites: Record<string, SuiteOutput>;
  totalSeconds?: number;
  /** The bench process's peak resident memory over the run (MiB; its worker processes are measured apart). */
  peakRssMiB?: number;
}
