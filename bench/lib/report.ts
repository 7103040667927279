// docs/benchmarks.md from the results: every figure with its spread, each target met or missed
// (by how much, and the measured reason), the charts, and how to reproduce. Each suite writes its
// own section (bench/suites/*-report.ts, prose in the .md beside it); this file assembles the page
// around them from its own template, bench/lib/report.md.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchResults } from "./results.ts";
import { IMAGES, PAGE, ReportDoc, type ReportSection } from "./report-doc.ts";
import { sentence } from "./report-template.ts";
import { renderReport } from "../suites/render-report.ts";
import { loadReport } from "../suites/load-report.ts";
import { replayReport } from "../suites/replay-report.ts";
import { globReport } from "../suites/glob-report.ts";
import { hostReport } from "../suites/host-report.ts";
import { editorReport } from "../suites/editor-report.ts";
import { factsReport } from "../suites/facts-report.ts";
import { wireReport } from "../suites/wire-report.ts";
import { compactionReport } from "../suites/compaction-report.ts";

/** The sections in page order (their numbers are in their titles). */
const SECTIONS: readonly ReportSection[] = [renderReport, loadReport, replayReport, globReport, hostReport, editorReport, factsReport, wireReport, compactionReport];

/** The headline leads with what a session costs (replayed, then on the wire), then what the agent keeps, then the timings. */
const HEADLINE: readonly ReportSection[] = [replayReport, wireReport, compactionReport, factsReport, renderReport, loadReport, globReport, hostReport, editorReport];

/** Writes the page as `benchmarks.md` into `dir` (docs/, or a run's scratch folder), its charts under `dir`/images/bench/. */
export function writeReport(results: BenchResults, dir: string): void {
  const imagesDir = join(dir, IMAGES);
  mkdirSync(imagesDir, { recursive: true });
  for (const s of Object.values(results.suites)) {
    for (const [file, svg] of Object.entries(s.charts ?? {})) if (typeof svg === "string" && svg.startsWith("<svg")) writeFileSync(join(imagesDir, file), svg);
  }
  writeFileSync(join(dir, "benchmarks.md"), renderMarkdown(results));
}

export function renderMarkdown(results: BenchResults): string {
  const d = new ReportDoc(results);
  const m = results.machine;
  d.push(
    PAGE.block("intro"),
    "",
    PAGE.block("run", {
      mode: PAGE.block(results.mode === "quick" ? "mode-quick" : "mode-full"),
      date: results.generatedAt.slice(0, 16).replace("T", " "),
      commit: results.commit,
      modified: results.sourcesModified.length ? sentence(PAGE.block("modified", { files: String(results.sourcesModified.length) })) : "",
      node: String(m.node),
      cpus: String(m.cpus),
      cpu: String(m.cpu),
      memory: String(m.memoryGiB),
      loadStart: (m.loadAverageAtStart ?? []).join(" / "),
      loadEnd: (m.loadAverageAtEnd ?? []).join(" / "),
      seconds: results.totalSeconds ? ` · ${Math.round(results.totalSeconds)} s` : "",
    }),
    "",
  );

  d.push(PAGE.block("headline"));
  for (const section of HEADLINE) {
    for (const [name, label, given] of section.headline?.(results) ?? []) if (d.f(name)) d.push(`| ${label} | ${d.spread(name)} | ${given?.[0] ?? d.target(name)} | ${given?.[1] ?? d.status(name)} |`);
  }
  d.push("");

  for (const section of SECTIONS) section.write(d, results);

  d.push(PAGE.block("reproduce"), "");
  const notes = Object.entries(results.suites).flatMap(([name, s]) => (s.notes ?? []).map((n) => `- ${name}: ${n}`));
  if (notes.length) d.push(PAGE.block("notes"), "", ...notes, "");
  return d.text();
}
