// Section 8 of docs/benchmarks.md, "On the wire": every run's bill and wall time in its tables,
// each target with its status and the figure measured before, the prices each provider was billed
// at, and the emulated meter's figure beside the wire-priced one when both ran.
import { describe, expect, it } from "vitest";
import { ReportDoc } from "../../bench/lib/report-doc.ts";
import { figure, type BenchResults, type Figure, type SuiteOutput } from "../../bench/lib/results.ts";
import { wireReport } from "../../bench/suites/wire-report.ts";

const target = (value: number, limit: number, unit = "ratio") => figure(value, unit, { target: { op: "<=", value: limit } });

function wireSuite(withPeer: boolean, withEmulated: boolean): SuiteOutput {
  const figures: Record<string, Figure> = {};
  const ids = withPeer ? ["none", "defaults", "picondense"] : ["none", "defaults"];
  for (const [p, base] of [["openai", 2], ["anthropic", 5]] as const) {
    ids.forEach((id, i) => {
      figures[`wire.${p}.${id}.dollars`] = figure(base / (i + 1), "USD");
      figures[`wire.${p}.${id}.cacheRead`] = figure(100_000 * (i + 1), "tokens");
      figures[`wire.${p}.${id}.cacheWrite`] = figure(20_000 * (i + 1), "tokens");
      figures[`wire.${p}.${id}.uncached`] = figure(3_000 * (i + 1), "tokens");
      figures[`wire.${p}.${id}.peakContext`] = figure(90_000 / (i + 1), "tokens");
      figures[`wire.${p}.${id}.summarizerCalls`] = id === "defaults" ? target(30, 36, "calls") : figure(id === "none" ? 0 : 75, "calls");
      if (id !== "none") {
        figures[`wire.${p}.${id}.vsNone`] = id === "defaults" ? target(1 / (i + 1), 0.4) : figure(1 / (i + 1), "ratio");
        figures[`wire.${p}.${id}.peakVsNone`] = id === "defaults" ? target(1 / (i + 1), 0.25) : figure(1 / (i + 1), "ratio");
      }
    });
    if (withPeer) figures[`wire.${p}.defaultsVsPiCondense`] = target(1.5, 0.8);
  }
  figures["wire.defaults.worstVsNone"] = target(0.5, 1);
  figures["wire.wall.none"] = figure(294, "s");
  figures["wire.wall.defaults"] = figure(299, "s");
  figures["wire.wall.defaults.vsNone"] = target(299 / 294, 1.02);
  if (withPeer) {
    figures["wire.wall.picondense"] = figure(317, "s");
    figures["wire.wall.picondense.vsNone"] = figure(317 / 294, "ratio");
  }
  figures["wire.anthropic.inputVsNone"] = figure(0.47, "ratio");
  if (withPeer) figures["wire.anthropic.inputVsPiCondense"] = figure(0.99, "ratio");
  if (withEmulated) {
    figures["wire.emulated.anthropic.vsNone"] = figure(0.41, "ratio");
    figures["wire.emulatedMinusWire.vsNone"] = figure(0.41 - 0.47, "ratio");
    figures["wire.emulated.anthropic.vsPiCondense"] = figure(0.81, "ratio");
    figures["wire.emulatedMinusWire.vsPiCondense"] = figure(0.81 - 0.99, "ratio");
  }
  return {
    figures,
    notes: [],
    charts: {},
    data: {
      latency: { baseMs: 500, perOutputTokenMs: 5 },
      piCondense: withPeer ? { version: "2.9.1" } : undefined,
      models: {
        openai: { id: "gpt-5", api: "openai-completions", prices: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 } },
        anthropic: { id: "claude-sonnet-4-6", api: "anthropic-messages", prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
      },
    },
  };
}

function page(suite: SuiteOutput | undefined): string {
  const results: BenchResults = { generatedAt: "2026-12-01T00:00:00Z", mode: "full", commit: "x", sourcesModified: [], machine: {}, figures: { ...(suite?.figures ?? {}) }, suites: suite ? { wire: suite } : {} };
  const d = new ReportDoc(results);
  wireReport.write(d, results);
  return d.text();
}

describe("the wire section", () => {
  it("says it did not run when the suite did not", () => {
    expect(page(undefined).trim()).toBe("## 8. On the wire\n\nNot run.");
    expect(page({ figures: {}, data: {}, notes: [], charts: {}, skipped: "quick" }).trim()).toBe("## 8. On the wire\n\nNot run.");
  });

  it("lists every run of each provider with its bill, and the wall times, with pi-condense's version", () => {
    const text = page(wireSuite(true, true));
    expect(text).toContain("| pi-condense 2.9.1 | $1.67 | 0.33× | 300,000 | 60,000 | 9,000 | 30,000 | 0.33× | 75 |");
    expect(text).toContain("| pi-pruner defaults | $1.00 | 0.5× | 200,000 | 40,000 | 6,000 | 45,000 | 0.5× | 30 |");
    expect(text).toContain("| no pruning | $2.00 | 1× | 100,000 | 20,000 | 3,000 | 90,000 | 1× | 0 |");
    expect(text).toContain("| pi-condense 2.9.1 | 317 | 1.08× |");
    expect(text).toContain("configured as `claude-sonnet-4-6` at $3 input, $15 output, $0.3 cache read and $3.75 cache write per million tokens");
    expect(text).toContain("at most 20 blocks back");
    expect(text).toContain("at least 1,024 tokens");
    expect(text).not.toMatch(/\{\{\w+\}\}|undefined|NaN/);
  });

  it("gives each target its status and the figure measured before", () => {
    const text = page(wireSuite(true, true));
    expect(text).toContain("- defaults ÷ pi-condense, Anthropic Messages: 1.50× (target ≤ 0.8×) — **missed** by 87.5% (1.50 vs 0.8)");
    expect(text).toContain("- peak context ÷ no pruning, OpenAI chat completions: 0.5× (target ≤ 0.25×) — **missed** by 100.0% (0.5 vs 0.25)");
    expect(text).toContain("- never above no pruning (the larger of the two): 0.5× (target ≤ 1.00×) — met");
    expect(text).toContain("- summarizer calls, Anthropic Messages: 30 calls (target ≤ 36 calls; 72 calls before) — met");
    expect(text).toContain("- wall time ÷ no pruning: 1.02× (target ≤ 1.02×; 1.14× before) — met");
    expect(text).toContain("- pi-condense's wall time ÷ no pruning: 1.08× (no target; 1.08× before)");
  });

  it("sets the emulated meter's figure beside the wire-priced one, with the difference, when the replay ran", () => {
    expect(page(wireSuite(true, true))).toContain("defaults 0.41× of no pruning, against 0.47× on the wire priced on the same basis (input and the summarizer's output; the emulated meter does not price the agent's own output) — a difference of −0.06. Against pi-condense: 0.81× emulated, 0.99× on the wire, a difference of −0.18.");
    expect(page(wireSuite(true, false))).toContain("the replay suite did not run in the same bench run (`npm run bench -- --only replay,wire`). On the wire, priced like the emulated meter (input and the summarizer's output only), the defaults cost 0.47× of no pruning.");
  });

  it("without a peer, says so and lists no pi-condense row", () => {
    const text = page(wireSuite(false, false));
    expect(text).toContain("no peer: pi-condense was not run");
    expect(text).not.toContain("| pi-condense");
    expect(text).not.toContain("defaults ÷ pi-condense");
  });

  it("puts only its own figures in the headline", () => {
    const rows = wireReport.headline?.({} as BenchResults) ?? [];
    expect(rows.length).toBeGreaterThan(0);
    for (const [name] of rows) expect(name.startsWith("wire.")).toBe(true);
  });
});
