// Section 9 of docs/benchmarks.md, "Pi's compaction": each compaction's request with and without
// the pruner and the share, the files named of those touched, and what it says when a compaction
// of the pruner's run fell back to Pi's own or the suite did not run.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ReportDoc } from "../../bench/lib/report-doc.ts";
import { renderMarkdown } from "../../bench/lib/report.ts";
import { figure, type BenchResults, type Figure } from "../../bench/lib/results.ts";
import { compactionReport } from "../../bench/suites/compaction-report.ts";

const committed = JSON.parse(readFileSync(new URL("../../bench/results.json", import.meta.url), "utf8")) as BenchResults;

function results(fellBack: number, missing: string[]): BenchResults {
  const figures: Record<string, Figure> = {};
  const tasks = [3, 6, 10];
  tasks.forEach((task, i) => {
    figures[`compaction.own.after${task}.chars`] = figure(40_000 + i * 10_000, "chars");
    figures[`compaction.own.after${task}.tokens`] = figure(10_000 + i * 2_500, "tokens");
    figures[`compaction.pruned.after${task}.chars`] = figure(14_000 + i * 3_000, "chars");
    figures[`compaction.pruned.after${task}.tokens`] = figure(3_500 + i * 750, "tokens");
    figures[`compaction.share.after${task}`] = figure(0.35, "ratio", { target: { op: "<=", value: 1 } });
  });
  figures["compaction.own.total.chars"] = figure(150_000, "chars");
  figures["compaction.own.total.tokens"] = figure(37_500, "tokens");
  figures["compaction.pruned.total.chars"] = figure(51_000, "chars");
  figures["compaction.pruned.total.tokens"] = figure(12_750, "tokens");
  figures["compaction.share.total"] = figure(0.34, "ratio", { target: { op: "<=", value: 1 } });
  figures["compaction.pruned.fellBack"] = figure(fellBack, "compactions", { target: { op: "<=", value: 0 } });
  const compactions = (missed: string[]) => tasks.map((task, i) => ({ afterTask: task, touched: 10 * (i + 1), missing: i === 2 ? missed : [] }));
  return {
    ...committed,
    figures,
    suites: { compaction: { figures, notes: [], charts: {}, data: { compactAfter: tasks, model: "gpt-5", runs: { own: { compactions: compactions([]) }, pruned: { compactions: compactions(missing) } } } } },
  };
}

function section(r: BenchResults): string {
  const d = new ReportDoc(r);
  compactionReport.write(d, r);
  return d.text();
}

describe("the compaction section of the benchmarks page", () => {
  it("gives each compaction's request with and without the pruner, the share, and the files each names", () => {
    const text = section(results(0, []));
    expect(text).toContain("with Pi's `compact` command after tasks 3, 6, 10");
    expect(text).toContain("| after task 3 | 10,000 tokens (40,000 chars) | 3,500 tokens (14,000 chars) | 0.35× (35.0%) | 10 | 10 of 10 | 10 of 10 |");
    expect(text).toContain("| all three | 37,500 tokens (150,000 chars) | 12,750 tokens (51,000 chars) | 0.34× (34.0%) |");
    expect(text).toContain("All three compactions of the run with the pruner were written from the pruned history.");
  });

  it("says how many files a compaction's lists left out and how many compactions fell back to Pi's own", () => {
    const text = section(results(1, ["src/a.ts"]));
    expect(text).toContain("| after task 10 | 15,000 tokens (60,000 chars) | 5,000 tokens (20,000 chars) | 0.35× (35.0%) | 30 | 30 of 30 | 29 of 30 |");
    expect(text).toContain("In the run with the pruner, 1 compaction(s) fell back to Pi's own");
  });

  it("is on the page once, from the committed results, and says when the suite did not run", () => {
    const page = renderMarkdown(committed);
    expect(page.split("\n").filter((line) => line === "## 9. Pi's compaction")).toHaveLength(1);
    expect(page).toMatch(/\| Pi's compaction request on the long session with pi-pruner ÷ Pi's own \(three `\/compact`\) \| 0\.\d+× \| ≤ 1\.00× \| met \|/);
    expect(renderMarkdown({ ...committed, figures: {}, suites: {} })).toContain("## 9. Pi's compaction\n\nNot run.\n");
  });
});
