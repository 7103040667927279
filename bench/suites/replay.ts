// Figure 3: cost replay — a generated 200-turn coding session and a recorded real Pi session,
// replayed request by request through four policies and priced under the prefix-cache model.
import { existsSync, readFileSync } from "node:fs";
import { parseSessionText, getBranch } from "../../core/src/session.ts";
import { buildContext } from "../../core/src/context.ts";
import { codingScript, takeTurns, scriptFromMessages, type ScriptStep } from "../lib/gen.ts";
import { POLICIES, replayScript, type ReplayResult } from "../lib/replay.ts";
import { PRICE } from "../lib/pricing.ts";
import { RECORDED_META, RECORDED_SESSION, type RecordedMeta } from "../record-session.ts";
import { figure, newSuite, type SuiteOutput } from "../lib/results.ts";
import { barChart, lineChart } from "../lib/svg.ts";

export interface ReplayOptions {
  quick: boolean;
  log: (line: string) => void;
}

export const GENERATED_TURNS = 200;
/** Output sizes of the generated session, chosen so that without pruning it peaks just under a 200k-token window. */
export const GENERATED_SCALE = 0.75;
export const GENERATED_SEED = 42;

function recordedScript(): { script: ScriptStep[]; meta: RecordedMeta } | undefined {
  if (!existsSync(RECORDED_SESSION) || !existsSync(RECORDED_META)) return undefined;
  const data = parseSessionText(readFileSync(RECORDED_SESSION, "utf8"));
  const branch = getBranch(data);
  const messages = buildContext(branch.entries).map((c) => c.message);
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

  out.data = {
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
