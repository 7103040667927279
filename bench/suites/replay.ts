// Figure 3: cost replay — a generated 200-turn coding session and a recorded real Pi session,
// replayed request by request through four policies and priced under the prefix-cache model.
import { existsSync, readFileSync } from "node:fs";
import { parseSessionText, getBranch } from "../../core/src/session/session-reader.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { codingScript, takeTurns, scriptFromMessages, type ScriptStep } from "../lib/gen.ts";
import { POLICIES, replayScript, type ReplayResult } from "../lib/replay.ts";
import { PRICE } from "../lib/pricing.ts";
import { RECORDED_META, RECORDED_SESSION, type RecordedMeta } from "../record-session.ts";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { spread } from "../lib/stats.ts";
import { barChart, lineChart } from "../lib/svg.ts";

export interface ReplayOptions {
  quick: boolean;
  log: (line: string) => void;
}

export const GENERATED_TURNS = 200;
/** Output sizes of the generated session: the largest multiple of 0.05 at which seed 42 without pruning peaks under 200k tokens. */
export const GENERATED_SCALE = 0.7;
/** More seeds of the same generator (full runs): the spread of the ratios across sessions. */
export const EXTRA_SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];
export const GENERATED_SEED = 42;

function recordedScript(): { script: ScriptStep[]; meta: RecordedMeta } | undefined {
  if (!existsSync(RECORDED_SESSION) || !existsSync(RECORDED_META)) return undefined;
  const data = parseSessionText(readFileSync(RECORDED_SESSION, "utf8"));
  const branch = getBranch(data);
  const messages = buildPiContext(branch.entries).map((c) => c.message);
  const meta = JSON.parse(readFileSync(RECORDED_META, "utf8")) as RecordedMeta;
  return { script: scriptFromMessages(messages as never), meta };
}

function summarize(name: string, results: ReplayResult[], out: SuiteOutput, withTarget: boolean): void {
  const none = results.find((r) => r.policy === "none")!;
  for (const r of results) {
    const p = `replay.${name}.${r.policy}`;
    out.figures[`${p}.billed`] = figure(r.billed, "input-token equivalents", {}, 0);
    out.figures[`${p}.vsNone`] = figure(r.billed / none.billed, "ratio", r.policy === "defaults" && withTarget ? { target: { op: "<=", value: 0.5 }, note: "billed ÷ no pruning" } : { note: "billed ÷ no pruning" });
    out.figures[`${p}.peakContext`] = figure(r.peakContext, "tokens", {}, 0);
    out.figures[`${p}.cacheHitRatio`] = figure(r.cacheHitRatio, "fraction of input tokens read from cache");
    if (r.summarizerCalls) {
      out.figures[`${p}.summarizerCalls`] = figure(r.summarizerCalls, "calls", {}, 0);
      out.figures[`${p}.summarizerInput`] = figure(r.summarizerInputTokens, "tokens (priced 1×)", {}, 0);
      out.figures[`${p}.summarizerOutput`] = figure(r.summarizerOutputTokens, "tokens (not priced)", {}, 0);
    }
  }
  const defaults = results.find((r) => r.policy === "defaults")!;
  const strip = results.find((r) => r.policy === "strip")!;
  out.figures[`replay.${name}.stripVsDefaults`] = figure(strip.billed / defaults.billed, "ratio", { note: "thinking strip on ÷ off (both with the other defaults)" });
}

export async function runReplay(options: ReplayOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const recorded = recordedScript();
  const headChars = recorded?.meta.headChars ?? 5600;
  if (!recorded) out.notes.push("bench/fixtures/recorded-session.jsonl is missing: run `node bench/record-session.ts`");

  const sessions: { name: string; label: string; script: ScriptStep[] }[] = [
    { name: "generated", label: `generated ${GENERATED_TURNS}-turn coding session`, script: takeTurns(codingScript({ seed: GENERATED_SEED, scale: GENERATED_SCALE }), GENERATED_TURNS) },
  ];
  if (recorded) sessions.push({ name: "recorded", label: "recorded real Pi session", script: recorded.script });

  const all: Record<string, ReplayResult[]> = {};
  for (const session of sessions) {
    const results: ReplayResult[] = [];
    for (const policy of POLICIES) {
      const t0 = performance.now();
      const r = await replayScript(session.script, policy, headChars);
      results.push(r);
      for (const n of r.notes) if (!out.notes.includes(n)) out.notes.push(n);
      options.log(`replay ${session.name} ${policy.id}: billed ${Math.round(r.billed)} (peak ${Math.round(r.peakContext)} tokens, cache hits ${(r.cacheHitRatio * 100).toFixed(1)}%, ${r.summarizerCalls} summarizer calls) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    summarize(session.name, results, out, session.name === "generated");
    all[session.name] = results;
    const defaults = results.find((r) => r.policy === "defaults")!;
    const strip = results.find((r) => r.policy === "strip")!;
    if (defaults.thinkingBlocksRaw > 16 && strip.thinkingBlocksLast === defaults.thinkingBlocksLast) {
      out.notes.push(`${session.name}: the thinking-strip policy sent as many thinking blocks as the defaults (${strip.thinkingBlocksLast}); the render does not strip thinking at this commit, so both policies are the same`);
    }
  }

  // The same generator with other seeds: how much the ratios move from one session to the next.
  const seedRows: { seed: number; requests: number; prompts: number; peakNone: number; ratios: Record<string, number> }[] = [];
  if (!options.quick) {
    for (const seed of EXTRA_SEEDS) {
      const script = takeTurns(codingScript({ seed, scale: GENERATED_SCALE }), GENERATED_TURNS);
      const rs: ReplayResult[] = [];
      for (const policy of POLICIES) rs.push(await replayScript(script, policy, headChars));
      const none = rs.find((r) => r.policy === "none")!;
      seedRows.push({ seed, requests: none.requests, prompts: script.filter((x) => x.kind === "user").length, peakNone: Math.round(none.peakContext), ratios: Object.fromEntries(rs.map((r) => [r.policy, r.billed / none.billed])) });
    }
    const gen = all.generated!;
    const none42 = gen.find((r) => r.policy === "none")!;
    const withPrimary = [{ seed: GENERATED_SEED, ratios: Object.fromEntries(gen.map((r) => [r.policy, r.billed / none42.billed])) }, ...seedRows];
    for (const policy of POLICIES.filter((p) => p.id !== "none")) {
      out.figures[`replay.seeds.${policy.id}.vsNone`] = spreadFigure(spread(withPrimary.map((r) => r.ratios[policy.id]!)), "ratio", { note: `billed ÷ no pruning over ${withPrimary.length} generated 200-turn sessions (seeds ${withPrimary.map((r) => r.seed).join(", ")})` });
    }
    out.figures["replay.seeds.stripVsDefaults"] = spreadFigure(spread(withPrimary.map((r) => r.ratios.strip! / r.ratios.defaults!)), "ratio", { note: "thinking strip on ÷ off over the same sessions" });
    options.log(`replay seeds: defaults ÷ none ${withPrimary.map((r) => r.ratios.defaults!.toFixed(2)).join(", ")}`);
  }

  out.data = {
    seeds: seedRows,
    headChars,
    prices: PRICE,
    sessions: sessions.map((s) => ({ name: s.name, label: s.label, requests: s.script.filter((x) => x.kind === "assistant").length, prompts: s.script.filter((x) => x.kind === "user").length })),
    results: Object.fromEntries(Object.entries(all).map(([k, rs]) => [k, rs.map((r) => ({ ...r, perRequest: r.perRequest.map((v) => Math.round(v)) }))])),
  };

  const labels = Object.fromEntries(POLICIES.map((p) => [p.id, p.label]));
  for (const session of sessions) {
    const results = all[session.name]!;
    out.charts[`replay-context-${session.name}.svg`] = lineChart({
      title: `Context sent per request — ${session.label}`,
      xLabel: "model request",
      yLabel: "input tokens (≈ characters / 4)",
      series: results.map((r) => ({ name: labels[r.policy]!, points: r.perRequest.map((v, i) => [i + 1, v] as [number, number]), dashed: r.policy === "strip" })),
    });
  }
  out.charts["replay-cost.svg"] = barChart({
    title: "Billed input-token equivalents relative to no pruning",
    yLabel: "× the cost of no pruning",
    labels: (v) => `${v.toFixed(2)}×`,
    guides: [{ y: 0.5, label: "target for defaults: ≤ 0.5×" }],
    groups: sessions.map((s) => {
      const results = all[s.name]!;
      const none = results.find((r) => r.policy === "none")!.billed;
      return { label: s.label, bars: results.map((r) => ({ name: labels[r.policy]!, value: r.billed / none })) };
    }),
  });
  return out;
}
