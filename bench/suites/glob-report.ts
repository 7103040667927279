// Section 4 of docs/benchmarks.md, "Glob matching", from the glob suite's figures; its prose is in
// glob-report.md.
import { openSection, chart, num, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate, sentence } from "../lib/report-template.ts";

const TEXT = readTemplate(new URL("./glob-report.md", import.meta.url));

export const globReport: ReportSection = {
  headline: () => [["glob.ratio", "Protection matching for decorations, `createPathMatcher` ÷ precompiled minimatch (100,000 paths × 10 patterns, the same answers on every path)"]],

  write(d, results) {
    const s = openSection(d, results, "glob", TEXT.block("title"));
    if (!s) return;
    const patterns = (s.data.patterns ?? []) as string[];
    const sameAnswers = d.f("glob.sameAnswers") ? TEXT.block("same-answers", { paths: d.val("glob.sameAnswers", false) }) : "";
    const ratio = TEXT.block("ratio", {
      wall: d.spread("glob.ratio"),
      cpu: d.spread("glob.ratioCpu"),
      status: d.status("glob.ratio"),
      why: d.f("glob.ratio")?.met ? "" : sentence(TEXT.block("ratio-why")),
    });
    d.push(
      TEXT.block("intro", {
        patterns: patterns.map((p) => `\`${p}\``).join(", "),
        matchedPaths: d.val("glob.matchedPaths", false),
        ours: d.spread("glob.createPathMatcher"),
        oursPerMillion: d.val("glob.perMillionChecks", false),
        minimatch: d.spread("glob.minimatch"),
        minimatchPerMillion: num((d.v("glob.minimatch") / 1e6) * 1e6),
      }),
      "",
      [sameAnswers, ratio].filter(Boolean).join(" "),
      "",
      chart("glob.svg", "Glob matching time"),
      "",
    );
  },
};
