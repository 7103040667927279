// Section 1 of docs/benchmarks.md, "Render latency", from the render suite's figures; its prose is
// in render-report.md.
import { openSection, chart, num, pct, type ReportDoc, type ReportSection } from "../lib/report-doc.ts";
import { readTemplate, sentence } from "../lib/report-template.ts";
import type { BenchResults } from "../lib/results.ts";

const TEXT = readTemplate(new URL("./render-report.md", import.meta.url));

interface RenderRow {
  size: number;
  calls: number;
  rounds: number;
  mix: Record<string, number>;
  stats: Record<string, unknown>;
}

type StepTimes = Record<string, Record<string, number>>;

/** The CPU time per call of a timed figure, and whether it alone would meet the figure's target. */
function cpuNote(d: ReportDoc, results: BenchResults, name: string, cpu: string): string {
  const f = d.f(name);
  const c = d.f(cpu);
  if (!f || !c || !f.target) return "";
  const cpuMeets = c.value <= f.target.value;
  return sentence(
    !f.met && cpuMeets
      ? TEXT.block("cpu-waited", { cpu: d.val(cpu), load: String((results.machine.loadAverageAtStart ?? [])[0] ?? "?"), cpus: String(results.machine.cpus) })
      : TEXT.block("cpu", { cpu: d.val(cpu) }),
  );
}

function judgements(d: ReportDoc, results: BenchResults, rows: RenderRow[], steps: StepTimes | undefined): string[] {
  const lines: string[] = [];
  const steps2k = steps?.["2000"];
  const chainShare = steps2k ? (steps2k["+ chain compression (= defaults)"] ?? 0) - (steps2k["+ error purge"] ?? 0) : undefined;
  const byStep =
    d.f("render.view.p50.2000")?.met === false && chainShare !== undefined && steps2k
      ? TEXT.block("view-by-step", {
          stubs: num(steps2k["stub-replace + orphan sweep"] ?? 0),
          purge: num((steps2k["+ error purge"] ?? 0) - (steps2k["stub-replace + orphan sweep"] ?? 0)),
          chains: num(chainShare),
          chainCount: String(rows.find((r) => r.size === 2000)?.mix.chains ?? "?"),
        })
      : "";
  lines.push(TEXT.block("view", { value: d.spread("render.view.p50.2000"), status: d.status("render.view.p50.2000"), cpu: cpuNote(d, results, "render.view.p50.2000", "render.view.cpu.2000"), byStep: sentence(byStep) }));
  if (d.f("render.runtime.p50.2000")) {
    lines.push(
      TEXT.block("runtime", {
        value: d.spread("render.runtime.p50.2000"),
        status: d.status("render.runtime.p50.2000"),
        cpu: cpuNote(d, results, "render.runtime.p50.2000", "render.runtime.cpu.2000"),
        added: num(d.v("render.runtime.p50.2000") - d.v("render.view.p50.2000")),
        measure: d.val("render.sizeMeasure.p50.2000"),
        fullMeasure: d.val("render.sizeMeasureFull.p50.2000"),
      }),
    );
  }
  const nc = d.f("render.nochange.p50.2000");
  if (nc) {
    lines.push(
      TEXT.block("nochange", {
        value: d.spread("render.nochange.p50.2000"),
        status: d.status("render.nochange.p50.2000"),
        cpu: cpuNote(d, results, "render.nochange.p50.2000", "render.nochange.cpu.2000"),
        why: nc.met ? "" : sentence(TEXT.block("nochange-why")),
        emptyIndex: d.val("render.emptyindex.p50.2000"),
      }),
    );
  }
  const g = d.v("render.view.growth.20000vs2000");
  const gr = d.v("render.reference.growth.20000vs2000");
  // A quick run has no 20,000-message branch to grow to.
  if (Number.isNaN(g)) return lines;
  const verdict = g <= 1.3 ? TEXT.block("growth-linear") : TEXT.block(gr >= g * 0.6 ? "growth-machine" : "growth-mixed", { reference: num(gr) });
  lines.push(
    TEXT.block("growth", {
      growth: num(g),
      runtime: num(d.v("render.runtime.growth.20000vs2000")),
      nochange: num(d.v("render.nochange.growth.20000vs2000")),
      r2: num(d.v("render.view.fit.r2")),
      verdict,
    }),
  );
  return lines;
}

export const renderReport: ReportSection = {
  headline: () => [
    ["render.peer.ratio.context.2000", "`context` handler p50, fresh copy per call, pi-pruner ÷ pi-condense, 2,000 messages"],
    ["render.peer.ratio.context.20000", "The same, 20,000 messages"],
    ["render.peer.ratio.nochange.2000", "No-change `context` p50, pi-pruner ÷ pi-condense, 2,000 messages"],
    ["render.view.p50.2000", "`renderModelView` p50, 2,000 messages"],
    ["render.runtime.p50.2000", "`PrunerRuntime.render` p50, 2,000 messages (what the `context` handler runs)"],
    ["render.nochange.p50.2000", "No-change render p50, 2,000 messages"],
    ["render.view.growth.20000vs2000", "Render growth: per-message time at 20,000 ÷ at 2,000"],
  ],

  write(d, results) {
    const s = openSection(d, results, "render", TEXT.block("title"));
    if (!s) return;
    const rows = (s.data.rows ?? []) as RenderRow[];
    d.push(TEXT.block("intro"));
    for (const r of rows) {
      const n = r.size;
      d.push(`| ${n.toLocaleString("en-US")} | ${d.spread(`render.view.p50.${n}`)} | ${d.val(`render.view.p95.${n}`)} | ${d.val(`render.view.cpu.${n}`)} | ${d.spread(`render.runtime.p50.${n}`)} | ${d.val(`render.runtime.p95.${n}`)} | ${d.val(`render.runtime.cpu.${n}`)} | ${d.spread(`render.nochange.p50.${n}`)} | ${d.val(`render.nochange.cpu.${n}`)} | ${d.val(`render.emptyindex.p50.${n}`)} | ${d.val(`render.reference.p50.${n}`)} |`);
    }
    d.push("", TEXT.block("calls", { calls: rows.map((r) => `${r.calls} at ${r.size.toLocaleString("en-US")}`).join(", "), rounds: String(rows[0]?.rounds ?? "?") }), "");
    d.push(TEXT.block("mix"));
    for (const r of rows) {
      const x = r.mix;
      const share = (k: string) => `${x[k]} (${pct((x[k] ?? 0) / Math.max(1, x.toolResults ?? 1))})`;
      d.push(`| ${x.messages} | ${x.toolResults} | ${share("summarized")} | ${share("deduped")} | ${share("spilled")} | ${share("protected")} | ${x.errors} | ${share("raw")} | ${x.chains} | ${x.thinkingBlocks} |`);
    }
    if (d.f("render.peer.ratio.context.2000")) {
      d.push(TEXT.block("peer"));
      for (const r of rows) {
        const n = r.size;
        if (!d.f(`render.peer.ratio.context.${n}`)) continue;
        d.push(`| ${n.toLocaleString("en-US")} | ${d.spread(`render.peer.ours.context.p50.${n}`)} | ${d.spread(`render.peer.piCondense.context.p50.${n}`)} | ${d.spread(`render.peer.ratio.context.${n}`)} | ${d.val(`render.peer.ours.nochange.p50.${n}`)} | ${d.val(`render.peer.piCondense.nochange.p50.${n}`)} | ${d.val(`render.peer.ratio.nochange.${n}`)} | ${d.val(`render.peer.ours.afterFlush.p50.${n}`)} | ${d.val(`render.peer.piCondense.afterFlush.p50.${n}`)} | ${d.val(`render.peer.ratio.afterFlush.${n}`)} |`);
      }
      for (const key of ["render.peer.ratio.context.2000", "render.peer.ratio.context.20000", "render.peer.ratio.nochange.2000"]) {
        if (d.f(key)) d.push(TEXT.block("peer-ratio", { figure: key, value: d.spread(key), status: d.status(key) }));
      }
      d.push("");
    }
    d.push("", chart("render-latency.svg", "Render latency against branch length, log-log"), "");
    const steps = s.data.steps as StepTimes | undefined;
    const stepsNoChange = s.data.stepsNoChange as StepTimes | undefined;
    if (steps && Object.keys(steps).length) {
      const sizes = Object.keys(steps);
      d.push(
        TEXT.block("steps"),
        "",
        `| step | ${sizes.map((k) => Number(k).toLocaleString("en-US")).join(" | ")} | ${sizes.map((k) => `no change, ${Number(k).toLocaleString("en-US")}`).join(" | ")} |`,
        `|---|${sizes.map(() => "---:").join("|")}|${sizes.map(() => "---:").join("|")}|`,
      );
      const names = [...new Set(Object.values(steps).flatMap((x) => Object.keys(x)))];
      for (const n of names) d.push(`| ${n} | ${sizes.map((k) => (steps[k]![n] === undefined ? "—" : num(steps[k]![n]!))).join(" | ")} | ${sizes.map((k) => (stepsNoChange?.[k]?.[n] === undefined ? "—" : num(stepsNoChange[k]![n]!))).join(" | ")} |`);
      d.push("");
    }
    d.push(...judgements(d, results, rows, steps), "");
  },
};
