// Figure 3: cost replay — generated 200-turn coding sessions (several seeds), the short and the
// long recorded real Pi session, replayed request by request through pi-pruner's policies and the
// peers (no pruning, observation masking, pi-condense when a checkout is given), every request
// priced under each price model.
import { existsSync, readFileSync } from "node:fs";
import { parseSessionText, getBranch } from "../../core/src/session/session-reader.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { CACHE_RULES, PRICE_MODELS } from "../../core/src/cost/price-rules.ts";
import { codingScript, takeTurns, scriptFromMessages, type ScriptStep } from "../lib/gen.ts";
import { MASKING_POLICY, PI_CONDENSE_SETTINGS, POLICIES, piCondensePolicy, replayPerProvider, type PiHead, type Policy, type ReplayResult } from "../lib/replay.ts";
import { MASKING_WINDOW } from "../lib/masking.ts";
import { RULES_NAME, TABLE_RULES, TARGET_RULES } from "./replay-rules.ts";
import { loadPiCondense, type PeerInfo } from "../lib/peers.ts";
import { RECORDED_LONG_META, RECORDED_LONG_SESSION, RECORDED_META, RECORDED_SESSION, type RecordedMeta } from "../record-session.ts";
import { figure, newSuite, spreadFigure, type Figure, type SuiteOutput } from "../lib/results.ts";
import { spread } from "../lib/stats.ts";
import { barChart, lineChart } from "../lib/svg.ts";

export interface ReplayOptions {
  quick: boolean;
  log: (line: string) => void;
  /** Checkouts of peers to run beside pi-pruner. */
  peers?: { piCondense?: string };
}

export const GENERATED_TURNS = 200;
/** Output sizes of the generated session: the largest multiple of 0.05 at which seed 42 without pruning peaks under 200k tokens. */
export const GENERATED_SCALE = 0.7;
export const GENERATED_SEED = 42;
/** Seeds of the generated sessions: the headline is the median over them. */
export const SEEDS = [GENERATED_SEED, 1, 2, 3, 4, 5, 6, 7, 8];
export const QUICK_SEEDS = [GENERATED_SEED, 1, 2];

/** Pi's head when no recording is there: the short recording's measured sizes. */
const FALLBACK_HEAD: PiHead = { systemChars: 2790, toolsChars: 2841 };

interface RecordedScript {
  script: ScriptStep[];
  meta: RecordedMeta;
}

function recordedScript(session: string, metaFile: string): RecordedScript | undefined {
  if (!existsSync(session) || !existsSync(metaFile)) return undefined;
  const data = parseSessionText(readFileSync(session, "utf8"));
  const messages = buildPiContext(getBranch(data).entries).map((c) => c.message);
  const meta = JSON.parse(readFileSync(metaFile, "utf8")) as RecordedMeta;
  return { script: scriptFromMessages(messages as never), meta };
}

interface SessionRun {
  name: string;
  label: string;
  requests: number;
  prompts: number;
  /** One result list per replayed session (one per seed for the generated sessions). */
  runs: { seed?: number; results: ReplayResult[] }[];
}

const byPolicy = (rs: ReplayResult[], id: string) => rs.find((r) => r.policy === id);

/** Ratios of one replayed session, per policy and rules (billed ÷ no pruning and the other comparisons). */
function ratios(rs: ReplayResult[]): Record<string, number> {
  const none = byPolicy(rs, "none")!;
  const out: Record<string, number> = {};
  for (const r of rs) {
    out[`${r.policy}.peakVsNone`] = r.peakContext / none.peakContext;
    if (r.summarizerCalls) out[`${r.policy}.summarizerInput`] = r.summarizerInputTokens;
    for (const rules of CACHE_RULES) {
      out[`${r.policy}.${rules}.vsNone`] = r.cost[rules].billed / none.cost[rules].billed;
      if (none.cost[rules].cacheWriteTokens > 0) out[`${r.policy}.${rules}.cacheWritesVsNone`] = r.cost[rules].cacheWriteTokens / none.cost[rules].cacheWriteTokens;
    }
  }
  const defaults = byPolicy(rs, "defaults")!;
  for (const rules of CACHE_RULES) {
    for (const [other, key] of [["picondense", "defaultsVsPiCondense"], ["masking", "defaultsVsMasking"]] as const) {
      const o = byPolicy(rs, other);
      if (o) out[`${key}.${rules}`] = defaults.cost[rules].billed / o.cost[rules].billed;
    }
    const strip = byPolicy(rs, "strip");
    const naive = byPolicy(rs, "naive");
    if (strip) out[`stripVsDefaults.${rules}`] = strip.cost[rules].billed / defaults.cost[rules].billed;
    if (naive) out[`naiveVsDefaults.${rules}`] = naive.cost[rules].billed / defaults.cost[rules].billed;
  }
  return out;
}

/**
 * The target a figure carries, by the issue's list: on the long recorded session and the generated
 * ones, defaults ≤ 0.40× no pruning, ≤ 0.80× pi-condense, peak ≤ 0.25×; on every session, ≤ 1.00×
 * observation masking; on the short recorded one, ≤ 1.00× no pruning (the pruner never costs more
 * than it saves; the 0.40 target implies it elsewhere).
 */
function targetOf(session: string, key: string): { target: { op: "<="; value: number }; note: string } | undefined {
  const main = session !== "recorded";
  if (key === "defaults.peakVsNone") return main ? { target: { op: "<=", value: 0.25 }, note: "peak context ÷ no pruning" } : undefined;
  for (const rules of TARGET_RULES) {
    if (key === `defaults.${rules}.vsNone`) return { target: { op: "<=", value: main ? 0.4 : 1 }, note: `billed ÷ no pruning, ${rules} rules` };
    if (key === `defaultsVsPiCondense.${rules}` && main) return { target: { op: "<=", value: 0.8 }, note: `defaults ÷ pi-condense, ${rules} rules` };
    if (key === `defaultsVsMasking.${rules}`) return { target: { op: "<=", value: 1 }, note: `defaults ÷ observation masking, ${rules} rules` };
  }
  return undefined;
}

function unitOf(key: string): string {
  return key.endsWith(".summarizerInput") ? "tokens" : "ratio";
}

function summarize(session: SessionRun, out: SuiteOutput): void {
  const perRun = session.runs.map((r) => ratios(r.results));
  const keys = [...new Set(perRun.flatMap((r) => Object.keys(r)))];
  for (const key of keys) {
    const values = perRun.map((r) => r[key]).filter((v): v is number => v !== undefined && Number.isFinite(v));
    if (!values.length) continue;
    const target = targetOf(session.name, key);
    const digits = unitOf(key) === "tokens" ? 0 : 4;
    const note = `${target?.note ?? key}${perRun.length > 1 ? ` (median over ${perRun.length} seeds: ${session.runs.map((r) => r.seed).join(", ")})` : ""}`;
    const f: Figure = perRun.length > 1 ? spreadFigure(spread(values), unitOf(key), { ...(target ?? {}), note }, digits) : figure(values[0]!, unitOf(key), { ...(target ?? {}), note }, digits);
    out.figures[`replay.${session.name}.${key}`] = f;
  }
}

export async function runReplay(options: ReplayOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const short = recordedScript(RECORDED_SESSION, RECORDED_META);
  const long = recordedScript(RECORDED_LONG_SESSION, RECORDED_LONG_META);
  const head: PiHead = short ? { systemChars: short.meta.systemChars, toolsChars: short.meta.toolsChars } : FALLBACK_HEAD;
  if (!short) out.notes.push("bench/fixtures/recorded-session.jsonl is missing: run `node bench/record-session.ts`");
  if (!long) out.notes.push("the long recorded session (bench/fixtures/recorded-long-session.jsonl) is missing: it is recorded by `node bench/record-session.ts`; its rows are left out");

  const policies: Policy[] = [...POLICIES, MASKING_POLICY];
  let piCondense: PeerInfo | undefined;
  if (options.peers?.piCondense) {
    const loaded = await loadPiCondense(options.peers.piCondense);
    piCondense = loaded.info;
    policies.push(piCondensePolicy(loaded.factory, loaded.info));
  } else out.notes.push("pi-condense was not run: give a checkout with `npm run bench -- --peer-pi-condense DIR` (a clone of github.com/jjuraszek/pi-condense at its 2.9.1 tag)");

  const replayAll = async (name: string, script: ScriptStep[], piHead: PiHead): Promise<ReplayResult[]> => {
    const results: ReplayResult[] = [];
    for (const policy of policies) {
      const t0 = performance.now();
      const r = await replayPerProvider(script, policy, piHead);
      results.push(r);
      for (const n of r.notes) if (!out.notes.includes(n)) out.notes.push(n);
      const bills = TABLE_RULES.map((rules) => `${rules} ${Math.round(r.cost[rules].billed)}`).join(", ");
      options.log(`replay ${name} ${policy.id}: billed ${bills} (peak ${Math.round(r.peakContext)} tokens, ${r.summarizerCalls} summarizer calls) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    const condense = byPolicy(results, "picondense");
    if (condense) {
      const pruned = condense.summarizerCalls > 0 && condense.rewrittenRequests > 0;
      out.notes.push(`${name}: pi-condense ${pruned ? "pruned" : "did not prune"}: ${condense.summarizerCalls} summarizer calls, ${condense.rewrittenRequests} of ${condense.requests} requests sent rewritten by its \`context\` handler`);
    }
    return results;
  };

  const seeds = options.quick ? QUICK_SEEDS : SEEDS;
  const sessions: SessionRun[] = [];
  const generated: SessionRun = { name: "generated", label: `generated ${GENERATED_TURNS}-turn coding sessions (${seeds.length} seeds)`, requests: 0, prompts: 0, runs: [] };
  for (const seed of seeds) {
    const script = takeTurns(codingScript({ seed, scale: GENERATED_SCALE }), GENERATED_TURNS);
    generated.runs.push({ seed, results: await replayAll(`generated seed ${seed}`, script, head) });
    if (seed === GENERATED_SEED) {
      generated.requests = script.filter((x) => x.kind === "assistant").length;
      generated.prompts = script.filter((x) => x.kind === "user").length;
    }
  }
  sessions.push(generated);
  for (const [name, label, recorded] of [["recorded", "recorded real Pi session (short)", short], ["long", "recorded real Pi session (long)", long]] as const) {
    if (!recorded) continue;
    const piHead = { systemChars: recorded.meta.systemChars, toolsChars: recorded.meta.toolsChars };
    sessions.push({ name, label, requests: recorded.script.filter((x) => x.kind === "assistant").length, prompts: recorded.script.filter((x) => x.kind === "user").length, runs: [{ results: await replayAll(name, recorded.script, piHead) }] });
  }
  for (const session of sessions) summarize(session, out);

  for (const session of sessions) {
    const primary = session.runs[0]!.results;
    const defaults = byPolicy(primary, "defaults")!;
    const strip = byPolicy(primary, "strip")!;
    if (defaults.thinkingBlocksRaw > 16 && strip.thinkingBlocksLast === defaults.thinkingBlocksLast) {
      out.notes.push(`${session.name}: the thinking-strip policy sent as many thinking blocks as the defaults (${strip.thinkingBlocksLast}); the render does not strip thinking at this commit, so both policies are the same`);
    }
  }
  const gen = out.figures;
  options.log(`replay: defaults ÷ none, median over seeds: ${TABLE_RULES.map((rules) => `${rules} ${gen[`replay.generated.defaults.${rules}.vsNone`]?.value}`).join(", ")}`);

  out.data = {
    head,
    priceModels: Object.fromEntries(CACHE_RULES.map((rules) => [rules, PRICE_MODELS[rules]])),
    rules: TABLE_RULES,
    maskingWindow: MASKING_WINDOW,
    piCondense: piCondense ? { ...piCondense, dir: undefined, settings: PI_CONDENSE_SETTINGS } : undefined,
    policies: policies.map((p) => ({ id: p.id, label: p.label, peer: p.peer === true })),
    sessions: sessions.map((s) => ({
      name: s.name,
      label: s.label,
      requests: s.requests,
      prompts: s.prompts,
      seeds: s.runs.map((r) => r.seed).filter((x) => x !== undefined),
      runs: s.runs.map((r) => ({ seed: r.seed, results: r.results.map((x) => ({ ...x, perRequest: x.perRequest.map((v) => Math.round(v)) })) })),
    })),
  };

  const labels = Object.fromEntries(policies.map((p) => [p.id, p.label]));
  for (const session of sessions) {
    const results = session.runs[0]!.results;
    out.charts[`replay-context-${session.name}.svg`] = lineChart({
      title: `Context sent per request — ${session.runs[0]!.seed !== undefined ? `generated session, seed ${session.runs[0]!.seed}` : session.label}`,
      xLabel: "model request",
      yLabel: "input tokens (≈ characters / 4)",
      series: results.map((r) => ({ name: labels[r.policy]!, points: r.perRequest.map((v, i) => [i + 1, v] as [number, number]), dashed: r.policy === "strip" || r.policy === "masking" })),
    });
  }
  for (const rules of TABLE_RULES) {
    out.charts[`replay-cost-${rules}.svg`] = barChart({
      title: `Billed input relative to no pruning — ${RULES_NAME[rules]}`,
      yLabel: "× the cost of no pruning",
      labels: (v) => `${v.toFixed(2)}×`,
      guides: rules === "simple" ? [] : [{ y: 0.4, label: "target for defaults: ≤ 0.4×" }, { y: 1, label: "no pruning" }],
      groups: sessions.map((s) => ({
        label: s.runs.length > 1 ? `generated (median of ${s.runs.length})` : s.label.replace("recorded real Pi session", "recorded"),
        bars: policies
          .filter((p) => p.id !== "none" && out.figures[`replay.${s.name}.${p.id}.${rules}.vsNone`])
          .map((p) => {
            const f = out.figures[`replay.${s.name}.${p.id}.${rules}.vsNone`]!;
            return { name: p.label, value: f.value, min: f.min, max: f.max };
          }),
      })),
    });
  }
  return out;
}
