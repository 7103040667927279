// Figure 8: the long session on the wire. The real `pi` plays the long recorded session's script
// (bench/lib/long-session.ts) against the scripted model server with no pruning, pi-pruner's
// defaults and pi-condense (from a checkout, unpatched), through two of Pi's providers:
// `openai-completions` and `anthropic-messages`. The request bodies the server logged are priced
// as sent (bench/lib/wire-bill.ts) at the registry prices of the model each run is configured as.
// The Anthropic runs answer with a modelled latency, and their wall time is the waiting a user
// sees; the OpenAI runs answer at once. Beside it: the emulated meter's figure for the same
// session, when the replay suite ran in the same bench run.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { REPO_ROOT } from "../../test/helpers/pi-process.ts";
import { billWire, type WireBill } from "../lib/wire-bill.ts";
import { LATENCY, playLongSession, registryModel, type WireModel } from "../lib/wire-session.ts";
import { WIRE_BASELINE, WIRE_PROVIDERS, WIRE_RUNS } from "../lib/wire-plan.ts";
import { figure, newSuite, type Figure, type SuiteOutput } from "../lib/results.ts";
import { barChart } from "../lib/svg.ts";

export interface WireOptions {
  quick: boolean;
  log: (line: string) => void;
  peers?: { piCondense?: string };
  /** The replay suite's output, when it ran earlier in the same bench run. */
  replay?: SuiteOutput;
}

/** The targets for pi-pruner's defaults on this session. */
const TARGETS = { vsNone: 0.4, vsPiCondense: 0.8, peakVsNone: 0.25, never: 1, summarizerCalls: WIRE_BASELINE.summarizerCalls / 2, wallVsNone: 1.02 } as const;

interface PlayedRun {
  provider: string;
  id: string;
  bill: WireBill;
  wallMs: number;
  bodiesWithBreakpoints: number;
}

/** The pi-condense checkout's version, or why it cannot be run. */
function piCondenseCheckout(dir: string): { dir: string; version: string } {
  const at = resolve(dir);
  const manifest = join(at, "package.json");
  if (!existsSync(manifest)) throw new Error(`${at} has no package.json: give the folder of a pi-condense checkout`);
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; version?: string };
  if (pkg.name !== "pi-condense") throw new Error(`${at} holds ${pkg.name ?? "an unnamed package"}, not pi-condense`);
  return { dir: at, version: pkg.version ?? "?" };
}

const usd = (value: number, extra: Omit<Figure, "value" | "unit"> = {}) => figure(value, "USD", extra, 4);
const count = (value: number, extra: Omit<Figure, "value" | "unit"> = {}) => figure(value, "tokens", extra, 0);

export async function runWire(options: WireOptions): Promise<SuiteOutput> {
  const out = newSuite();
  if (options.quick) {
    out.skipped = "quick";
    out.notes.push("not run in --quick: it plays the long session six times through the real pi, three of them with a modelled latency (about 15 minutes)");
    return out;
  }
  const build = spawnSync(process.execPath, [join(REPO_ROOT, "scripts", "build.mjs")], { cwd: REPO_ROOT, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`build failed: ${build.stderr}`);
  const condense = options.peers?.piCondense ? piCondenseCheckout(options.peers.piCondense) : undefined;
  if (!condense) out.notes.push("pi-condense was not run: give a checkout with `npm run bench -- --peer-pi-condense DIR` (a clone of github.com/jjuraszek/pi-condense at its 2.9.1 tag); only no pruning and pi-pruner are reported");
  const runs = WIRE_RUNS.filter((r) => r.pruner !== "pi-condense" || condense);

  const played: PlayedRun[] = [];
  const models: Record<string, WireModel> = {};
  for (const provider of WIRE_PROVIDERS) {
    const model = registryModel(provider.provider, provider.model, provider.api);
    models[provider.name] = model;
    for (const run of runs) {
      const t0 = performance.now();
      const result = await playLongSession({ model, pruner: run.pruner, piCondenseDir: condense?.dir, latency: provider.latency, settings: run.settings });
      const bill = billWire(model.api, result.requests, model.prices);
      played.push({ provider: provider.name, id: run.id, bill, wallMs: result.wallMs, bodiesWithBreakpoints: result.bodiesWithBreakpoints });
      options.log(
        `wire ${provider.name} ${run.id}: $${bill.dollars.toFixed(4)} (read ${bill.tokens.cacheRead}, written ${bill.tokens.cacheWrite}, uncached ${bill.tokens.uncached}; peak ${bill.peakContext}), ${bill.agentRequests} requests + ${bill.summarizerCalls} summarizer calls, ${(result.wallMs / 1000).toFixed(1)} s (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
      );
    }
  }
  const find = (provider: string, id: string) => played.find((p) => p.provider === provider && p.id === id);

  for (const provider of WIRE_PROVIDERS) {
    const none = find(provider.name, "none")!;
    const peer = find(provider.name, "picondense");
    const key = (id: string, measure: string) => `wire.${provider.name}.${id}.${measure}`;
    for (const run of runs) {
      const p = find(provider.name, run.id)!;
      const ours = run.id === "defaults";
      out.figures[key(run.id, "dollars")] = usd(p.bill.dollars, { note: `${run.label}, ${provider.label}: input and output at ${provider.model}'s registry prices` });
      out.figures[key(run.id, "cacheRead")] = count(p.bill.tokens.cacheRead);
      out.figures[key(run.id, "cacheWrite")] = count(p.bill.tokens.cacheWrite);
      out.figures[key(run.id, "uncached")] = count(p.bill.tokens.uncached);
      out.figures[key(run.id, "peakContext")] = count(p.bill.peakContext, { note: "the largest agent request's input tokens" });
      out.figures[key(run.id, "summarizerCalls")] = figure(p.bill.summarizerCalls, "calls", ours ? { target: { op: "<=", value: TARGETS.summarizerCalls }, note: `summarizer calls per session (${WIRE_BASELINE.summarizerCalls} before)` } : {}, 0);
      if (run.id === "none") continue;
      out.figures[key(run.id, "vsNone")] = figure(p.bill.dollars / none.bill.dollars, "ratio", ours ? { target: { op: "<=", value: TARGETS.vsNone }, note: `billed ÷ no pruning, ${provider.label} wire` } : { note: `billed ÷ no pruning, ${provider.label} wire` });
      out.figures[key(run.id, "peakVsNone")] = figure(p.bill.peakContext / none.bill.peakContext, "ratio", ours ? { target: { op: "<=", value: TARGETS.peakVsNone }, note: "peak context ÷ no pruning" } : { note: "peak context ÷ no pruning" });
    }
    const defaults = find(provider.name, "defaults")!;
    if (peer) out.figures[`wire.${provider.name}.defaultsVsPiCondense`] = figure(defaults.bill.dollars / peer.bill.dollars, "ratio", { target: { op: "<=", value: TARGETS.vsPiCondense }, note: `defaults ÷ pi-condense, ${provider.label} wire` });
    const background = find(provider.name, "background");
    if (peer && background) out.figures[`wire.${provider.name}.backgroundVsPiCondense`] = figure(background.bill.dollars / peer.bill.dollars, "ratio", { note: `backgroundSummaries on ÷ pi-condense, ${provider.label} wire` });
  }
  // Never above no pruning, on either provider: the larger of the two ratios.
  const worst = Math.max(...WIRE_PROVIDERS.map((p) => find(p.name, "defaults")!.bill.dollars / find(p.name, "none")!.bill.dollars));
  out.figures["wire.defaults.worstVsNone"] = figure(worst, "ratio", { target: { op: "<=", value: TARGETS.never }, note: "the larger of the two providers' billed ÷ no pruning" });

  // Wall clock: the latency-modelled Anthropic runs.
  const timed = WIRE_PROVIDERS.find((p) => p.latency)!;
  const wallNone = find(timed.name, "none")!.wallMs;
  for (const run of runs) {
    const p = find(timed.name, run.id)!;
    out.figures[`wire.wall.${run.id}`] = figure(p.wallMs / 1000, "s", { note: `${run.label}: the long session's wall time, every answer after ${LATENCY.baseMs / 1000} s + ${LATENCY.perOutputTokenMs} ms per output token` }, 1);
    if (run.id !== "none") {
      out.figures[`wire.wall.${run.id}.vsNone`] = figure(
        p.wallMs / wallNone,
        "ratio",
        run.id === "defaults" ? { target: { op: "<=", value: TARGETS.wallVsNone }, note: `wall time ÷ no pruning (${WIRE_BASELINE.wallVsNone}× before)` } : { note: `wall time ÷ no pruning (${WIRE_BASELINE.piCondenseWallVsNone}× before)` },
      );
    }
  }

  // The emulated meter on the same session: the replay's long recorded session under the
  // Anthropic rules. It prices input (and the summarizer's output) only, so the wire ratio it is
  // set against leaves out the agent's output too.
  const replay = options.replay && !options.replay.skipped ? options.replay.figures : undefined;
  const anthropic = WIRE_PROVIDERS.find((p) => p.api === "anthropic-messages")!;
  const wireInput = (id: string) => find(anthropic.name, id)?.bill.dollarsWithoutAgentOutput;
  const comparable = (id: string) => wireInput(id)! / wireInput("none")!;
  out.figures["wire.anthropic.inputVsNone"] = figure(comparable("defaults"), "ratio", { note: "defaults ÷ no pruning, Anthropic wire, input and the summarizer's output only (the emulated meter's basis)" });
  if (condense) out.figures["wire.anthropic.inputVsPiCondense"] = figure(wireInput("defaults")! / wireInput("picondense")!, "ratio", { note: "defaults ÷ pi-condense on the same basis" });
  if (replay) {
    const emulated = replay["replay.long.defaults.anthropic.vsNone"];
    const emulatedPeer = replay["replay.long.defaultsVsPiCondense.anthropic"];
    if (emulated) {
      out.figures["wire.emulated.anthropic.vsNone"] = figure(emulated.value, "ratio", { note: "the replay's long recorded session, defaults ÷ no pruning under the emulated Anthropic rules" });
      out.figures["wire.emulatedMinusWire.vsNone"] = figure(emulated.value - comparable("defaults"), "ratio", { note: "emulated − wire-priced, defaults ÷ no pruning" });
    }
    if (emulatedPeer && condense) {
      out.figures["wire.emulated.anthropic.vsPiCondense"] = figure(emulatedPeer.value, "ratio", { note: "the replay's long recorded session, defaults ÷ pi-condense under the emulated Anthropic rules" });
      out.figures["wire.emulatedMinusWire.vsPiCondense"] = figure(emulatedPeer.value - out.figures["wire.anthropic.inputVsPiCondense"]!.value, "ratio", { note: "emulated − wire-priced, defaults ÷ pi-condense" });
    }
  } else out.notes.push("the replay suite did not run in this bench run: the emulated meter's figure for the long session is not beside the wire-priced one (run `--only replay,wire`)");

  for (const p of played) if (p.provider === "openai" && p.bodiesWithBreakpoints > 0) out.notes.push(`openai ${p.id}: ${p.bodiesWithBreakpoints} chat-completions bodies carried cache_control; they were priced as automatic prefix caching`);

  out.data = {
    latency: LATENCY,
    baseline: WIRE_BASELINE,
    piCondense: condense ? { version: condense.version } : undefined,
    models: Object.fromEntries(Object.entries(models).map(([name, m]) => [name, { id: m.id, api: m.api, prices: m.prices }])),
    runs: played.map((p) => ({ provider: p.provider, id: p.id, wallMs: Math.round(p.wallMs), bill: p.bill })),
  };
  Object.assign(out.charts, wireCharts(out.figures, runs));
  return out;
}

/** The section's charts, drawn from its figures: the bills relative to no pruning per provider, and the timed runs' wall times. */
function wireCharts(figures: Record<string, Figure>, runs: readonly { id: string; label: string }[]): Record<string, string> {
  const timed = WIRE_PROVIDERS.find((p) => p.latency)!;
  return {
    "wire-cost.svg": barChart({
      title: "The long session on the wire: billed relative to no pruning",
      yLabel: "× the bill of no pruning",
      labels: (v) => `${v.toFixed(2)}×`,
      guides: [{ y: TARGETS.vsNone, label: `target for defaults: ≤ ${TARGETS.vsNone}×` }, { y: 1, label: "no pruning" }],
      groups: WIRE_PROVIDERS.map((provider) => ({
        label: provider.label,
        bars: runs.filter((r) => r.id !== "none").map((r) => ({ name: r.label, value: figures[`wire.${provider.name}.${r.id}.vsNone`]!.value })),
      })),
    }),
    "wire-wall.svg": barChart({
      title: `Wall time of the long session, answers after ${LATENCY.baseMs / 1000} s + ${LATENCY.perOutputTokenMs} ms per output token`,
      yLabel: "seconds",
      labels: (v) => `${v.toFixed(0)} s`,
      groups: [{ label: timed.label, bars: runs.map((r) => ({ name: r.label, value: figures[`wire.wall.${r.id}`]!.value })) }],
    }),
  };
}
