// Section 9 of docs/benchmarks.md, "Pi's compaction", from the compaction suite's figures and data;
// its prose is in compaction-report.md.
import { openSection, chart, pct, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate } from "../lib/report-template.ts";

const TEXT = readTemplate(new URL("./compaction-report.md", import.meta.url));

/** The compaction suite's data as bench/results.json keeps it. */
interface CompactionData {
  compactAfter: number[];
  model: string;
  runs: Record<"own" | "pruned", { compactions: { afterTask: number; touched: number; missing: string[] }[] }>;
}

const int = (value: number) => Math.round(value).toLocaleString("en-US");

export const compactionReport: ReportSection = {
  headline: () => [["compaction.share.total", "Pi's compaction request on the long session with pi-pruner ÷ Pi's own (three `/compact`)"]],

  write(d, results) {
    const s = openSection(d, results, "compaction", TEXT.block("title"));
    if (!s) return;
    const data = s.data as unknown as CompactionData;
    const tokens = (name: string) => `${int(d.v(`${name}.tokens`))} tokens (${int(d.v(`${name}.chars`))} chars)`;
    const named = (run: "own" | "pruned", i: number) => {
      const c = data.runs[run].compactions[i]!;
      return `${c.touched - c.missing.length} of ${c.touched}`;
    };
    d.push(TEXT.block("intro", { tasks: data.compactAfter.join(", "), model: data.model }), "", TEXT.block("table-head"));
    data.compactAfter.forEach((task, i) => {
      d.push(
        TEXT.block("table-row", {
          task: String(task),
          own: tokens(`compaction.own.after${task}`),
          pruned: tokens(`compaction.pruned.after${task}`),
          share: `${d.val(`compaction.share.after${task}`)} (${pct(d.v(`compaction.share.after${task}`))})`,
          touched: String(data.runs.own.compactions[i]!.touched),
          ownNamed: named("own", i),
          prunedNamed: named("pruned", i),
        }),
      );
    });
    d.push(
      TEXT.block("table-total", { own: tokens("compaction.own.total"), pruned: tokens("compaction.pruned.total"), share: `${d.val("compaction.share.total")} (${pct(d.v("compaction.share.total"))})` }),
      "",
      TEXT.block("files", { fellBack: d.v("compaction.pruned.fellBack") > 0 ? TEXT.block("fell-back", { count: int(d.v("compaction.pruned.fellBack")) }) : TEXT.block("fell-back-none") }),
      "",
      chart("compaction.svg", "Pi's compaction request with and without pi-pruner"),
      "",
    );
  },
};
