// What the sections of docs/benchmarks.md share: the page being written (its lines, and each
// figure as text with its spread, target and status), the number formats, and the shape of a
// section, which each suite provides beside its measurements (bench/suites/*-report.ts).
import type { BenchResults, Figure, SuiteOutput } from "./results.ts";
import { readTemplate } from "./report-template.ts";

/** Where the charts go, relative to the page's folder (docs/, or a run's scratch folder). */
export const IMAGES = "images/bench";

/** One row of the headline table: the figure, its label, and the target and status where they are stated in words instead of taken from the figure. */
type HeadlineRow = [figure: string, label: string, given?: [target: string, status?: string]];

export interface ReportSection {
  /** The section's rows of the headline table. */
  headline?(results: BenchResults): HeadlineRow[];
  /** Writes the section onto the page. */
  write(d: ReportDoc, results: BenchResults): void;
}

/** The page's own prose (bench/lib/report.md), and the blocks every section uses: a suite that did not run, a measure missing from a run. */
export const PAGE = readTemplate(new URL("./report.md", import.meta.url));

export function num(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return "—";
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(Math.max(1, digits - 1)).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}

export function pct(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

export function chart(name: string, alt: string): string {
  return `![${alt}](${IMAGES}/${name})`;
}

/** The suite's output, unless it did not run or failed. */
function suiteOf(results: BenchResults, name: string): SuiteOutput | undefined {
  const s = results.suites[name];
  return s && !s.skipped ? s : undefined;
}

/**
 * A section's title, then its suite's output; a suite that did not run or failed gets the page's
 * "not run" line under the title instead, and undefined.
 */
export function openSection(d: ReportDoc, results: BenchResults, suite: string, title: string): SuiteOutput | undefined {
  d.push(title, "");
  const s = suiteOf(results, suite);
  if (!s) d.push(PAGE.block("not-run"), "");
  return s;
}

export class ReportDoc {
  private readonly lines: string[] = [];
  private readonly results: BenchResults;
  constructor(results: BenchResults) {
    this.results = results;
  }
  f(name: string): Figure | undefined {
    return this.results.figures[name];
  }
  v(name: string): number {
    return this.f(name)?.value ?? Number.NaN;
  }
  /** "1.23 ms" */
  val(name: string, unit = true): string {
    const f = this.f(name);
    if (!f) return "—";
    return unit && f.unit && !f.unit.includes(" ") ? `${num(f.value)} ${f.unit === "ratio" ? "×" : f.unit}`.replace(" ×", "×") : num(f.value);
  }
  /** "1.23 ms (1.1–1.4)" */
  spread(name: string): string {
    const f = this.f(name);
    if (!f) return "—";
    const base = this.val(name);
    return f.min !== undefined && f.max !== undefined && f.runs && f.runs > 1 ? `${base} (${num(f.min)}–${num(f.max)})` : base;
  }
  status(name: string): string {
    const f = this.f(name);
    if (!f?.target) return "";
    if (f.met) return "met";
    const by = f.target.op === "<=" ? f.value / f.target.value : f.target.value / f.value;
    return `**missed** by ${pct(by - 1)} (${num(f.value)} vs ${num(f.target.value)})`;
  }
  target(name: string): string {
    const f = this.f(name);
    if (!f?.target) return "";
    return `${f.target.op === "<=" ? "≤" : "≥"} ${num(f.target.value)}${f.unit === "ratio" ? "×" : ` ${f.unit}`}`;
  }
  push(...lines: string[]): void {
    this.lines.push(...lines);
  }
  text(): string {
    return this.lines.join("\n").replace(/\n{3,}/g, "\n\n") + "\n";
  }
}
