// Figure 1: render latency — the `context` transform on generated branches of 200, 2,000 and
// 20,000 messages, as `renderModelView` alone and as `PrunerRuntime.render` (what the extension's
// `context` handler runs, including the status-line size measure), plus the no-change path.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRenderMemo, renderModelView, renderWhole, type RenderConfig } from "../../core/src/render/render.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { rebuildIndex, findCallForResult } from "../../core/src/prune/prune-index.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { isProtected } from "../../core/src/settings/protection.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { PrunerRuntime } from "../../pi-extension/src/runtime.ts";
import { OnceReporter } from "../../pi-extension/src/once-reporter.ts";
import { RequestSizes } from "../../pi-extension/src/request-sizes.ts";
import { generateSession } from "../lib/sessions.ts";
import { collectGarbage, linearFit, quantile, sampleCalls, spread, threadCpuMs, type CallSample } from "../lib/stats.ts";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { lineChart } from "../lib/svg.ts";
import type { AnyEntry } from "../../core/src/shapes/entries.ts";
import { messagesChars } from "../../core/src/shapes/size.ts";
import { PRUNE_FRONTIER } from "../../core/src/shapes/entries.ts";
import { performance } from "node:perf_hooks";
import piPruner from "../../pi-extension/src/index.ts";
import { driveExtension, type DrivenExtension } from "../lib/context-driver.ts";
import { loadPiCondense } from "../lib/peers.ts";

/**
 * Render configurations that switch the default steps on one at a time, for a per-step profile
 * through the public transform only: the increment from one to the next is that step's cost.
 * (Stub-replace and the orphan sweep cannot be switched off.)
 */
function stepConfigs(): [string, RenderConfig][] {
  const d = DEFAULT_CONFIG;
  const base = { ...d, purgeErrors: { ...d.purgeErrors, enabled: false }, chainCompression: { ...d.chainCompression, enabled: false }, thinkingStrip: { ...d.thinkingStrip, enabled: false } };
  return [
    ["stub-replace + orphan sweep", base],
    ["+ error purge", { ...base, purgeErrors: d.purgeErrors }],
    ["+ chain compression (= defaults)", { ...base, purgeErrors: d.purgeErrors, chainCompression: d.chainCompression }],
    ["+ thinking strip (not a default)", { ...d, thinkingStrip: { ...d.thinkingStrip, enabled: true } }],
  ];
}

export interface RenderOptions {
  quick: boolean;
  /** The branch sizes to time, of SIZES (default: all of them, or QUICK_SIZES in a quick run). */
  sizes?: readonly number[];
  log: (line: string) => void;
  /** Checkouts of peers to time beside pi-pruner (never vendored). */
  peers?: { piCondense?: string };
}

/**
 * Between two requests Pi waits for the model, so timers run: what the runtime defers to a timer
 * (the bill of the requests so far) runs then and lets go of their copies. A timer of the same
 * delay set after the runtime's fires after it.
 */
const nextRequest = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Per-call wall timings where each call gets a fresh input made outside the timed region (a
 * `structuredClone`, as Pi hands over), and `before` runs untimed first (the previous request).
 * The event loop turns after each call, untimed, so no call's copies outlive it.
 */
async function sampleFresh<T>(make: () => T, fn: (input: T) => unknown, calls: number, warmup: number, before?: () => unknown): Promise<CallSample> {
  const out: CallSample = [];
  let cpu = 0;
  for (let i = 0; i < warmup + calls; i++) {
    if (before) await before();
    const input = make();
    const c0 = threadCpuMs();
    const t0 = performance.now();
    await fn(input);
    const ms = performance.now() - t0;
    if (i >= warmup) {
      out.push(ms);
      cpu += threadCpuMs() - c0;
    }
    await nextRequest();
  }
  out.cpuPerCall = cpu / calls;
  return out;
}

/** The context without its last turn (from the last assistant message on): the request before. */
function previousRequest(messages: readonly AgentMessage[]): AgentMessage[] {
  let cut = messages.length - 1;
  while (cut > 0 && messages[cut]!.role !== "assistant") cut--;
  return messages.slice(0, cut);
}

/** The branch as it was before its newest flush: up to the run of pruner entries that holds the last frontier. */
function beforeLastFlush(entries: readonly AnyEntry[]): AnyEntry[] {
  let at = entries.length - 1;
  while (at >= 0 && !(entries[at]!.type === "custom" && (entries[at] as { customType?: string }).customType === PRUNE_FRONTIER)) at--;
  while (at > 0 && entries[at - 1]!.type !== "message") at--;
  return entries.slice(0, Math.max(0, at));
}

/** Occurrence keys of the tool results whose content differs in (or is absent from) what was sent. */
function prunedResults(raw: readonly AgentMessage[], sent: readonly AgentMessage[]): string[] {
  const sentText = new Map<string, string>();
  for (const m of sent) if (m.role === "toolResult") sentText.set(`${m.toolCallId}@${m.timestamp}`, JSON.stringify(m.content));
  return raw.filter((m) => m.role === "toolResult" && sentText.get(`${m.toolCallId}@${m.timestamp}`) !== JSON.stringify(m.content)).map((m) => `${(m as { toolCallId: string }).toolCallId}@${m.timestamp}`);
}

export const SIZES = [200, 2_000, 20_000];
/** A quick run leaves out the 20,000-message branch: each copy of it is about 50 MB and a call takes seconds on a busy machine. */
const QUICK_SIZES = [200, 2_000];

interface Mix {
  messages: number;
  toolResults: number;
  summarized: number;
  deduped: number;
  spilled: number;
  protected: number;
  errors: number;
  raw: number;
  chains: number;
  thinkingBlocks: number;
}

function mixOf(messages: readonly AgentMessage[], entries: readonly AnyEntry[]): Mix {
  const { index } = rebuildIndex(entries);
  const mix: Mix = { messages: messages.length, toolResults: 0, summarized: 0, deduped: 0, spilled: 0, protected: 0, errors: 0, raw: 0, chains: index.chains.length, thinkingBlocks: 0 };
  const args = new Map<string, Record<string, unknown>>();
  for (const m of messages) {
    if (m.role === "assistant") {
      for (const b of m.content) {
        if (b.type === "toolCall") args.set(b.id, b.arguments);
        if (b.type === "thinking") mix.thinkingBlocks++;
      }
    }
    if (m.role !== "toolResult") continue;
    mix.toolResults++;
    if (m.isError) mix.errors++;
    const found = findCallForResult(index, m.toolCallId, m.timestamp);
    if (isProtected(m.toolName, args.get(m.toolCallId) ?? {}, DEFAULT_CONFIG)) mix.protected++;
    else if (found?.aliased) mix.deduped++;
    else if (found?.call.record.spillPath) mix.spilled++;
    else if (found) mix.summarized++;
    else mix.raw++;
  }
  return mix;
}

/**
 * The same messages with nothing for any render step to do: every tool-call id renamed and every
 * timestamp moved by 1 ms (so no index record, alias or chain of the branch matches them), and no
 * failed call (so error purge has nothing to shrink). This is the no-change path at full length:
 * every step scans the whole array and the same array must come back.
 */
function withNothingToDo(messages: readonly AgentMessage[]): AgentMessage[] {
  return structuredClone(messages).map((m) => {
    const moved = { ...m, timestamp: m.timestamp + 1 } as AgentMessage;
    if (moved.role === "toolResult") return { ...moved, toolCallId: `${moved.toolCallId}-x`, isError: false };
    if (moved.role === "assistant") return { ...moved, content: moved.content.map((b) => (b.type === "toolCall" ? { ...b, id: `${b.id}-x` } : b)) };
    return moved;
  });
}

let referenceSink = 0;
function referencePass(messages: readonly AgentMessage[]): number {
  let n = 0;
  for (const m of messages) {
    const content = (m as { content?: unknown }).content;
    if (m.role === "toolResult" && Array.isArray(content)) n += (content[0] as { type: string }).type.length;
    else if (Array.isArray(content) && content.length) n += 1;
  }
  referenceSink += n;
  return referenceSink;
}

export async function runRender(options: RenderOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const rounds = options.quick ? 2 : 7;
  const callsFor = (n: number) => (options.quick ? (n <= 200 ? 200 : n <= 2000 ? 40 : 4) : n <= 200 ? 500 : n <= 2000 ? 100 : 12);
  const config = DEFAULT_CONFIG;
  const rows: Record<string, unknown>[] = [];
  // The per-step profile is left out of quick runs.
  const steps = options.quick ? [] : stepConfigs();
  const stepProfile: Record<string, Record<string, number>> = {};
  const stepProfileNoChange: Record<string, Record<string, number>> = {};
  const p50s: Record<string, [number, number][]> = { view: [], runtime: [], nochange: [], view95: [], runtime95: [], reference: [] };

  const condense = options.peers?.piCondense ? await loadPiCondense(options.peers.piCondense) : undefined;
  if (condense) out.notes.push(`render: ${condense.info.name} ${condense.info.version} timed beside pi-pruner, both through their real entries, settings \`{ "contextPrune": { "enabled": true } }\` for pi-condense and defaults for pi-pruner`);
  const sizes = options.sizes ?? (options.quick ? QUICK_SIZES : SIZES);
  const left = SIZES.filter((n) => !sizes.includes(n));
  if (left.length) out.notes.push(`${options.quick ? "quick run" : "partial run"}: the ${left.map((n) => n.toLocaleString("en-US")).join(" and ")}-message branch${left.length > 1 ? "es are" : " is"} left out, and with ${left.length > 1 ? "them" : "it"} the growth figures`);
  for (const size of sizes) {
    const root = mkdtempSync(join(tmpdir(), "pprb-render-"));
    try {
      const { host } = await generateSession({ root, seed: 11, messages: size });
      const entries = host.entries;
      const context = buildPiContext(entries).map((c) => c.message);
      const { index } = rebuildIndex(entries);
      const mix = mixOf(context, entries);
      // For the per-step profile and the size measure: copies in rotation (the timed rounds below take a fresh copy per call).
      const copies = [structuredClone(context), structuredClone(context), structuredClone(context)];
      const runtime = new PrunerRuntime(config, new OnceReporter(() => {}));
      runtime.rebuild(entries);
      const first = renderModelView(copies[0]!, index, config);
      if (first.messages === copies[0]) options.log(`render: ${size} messages rendered unchanged (unexpected for this mix)`);

      const foreign = withNothingToDo(context);
      // Copies in rotation for the per-step profile only; the check needs one, dropped after it.
      const foreignCopies = steps.length ? [structuredClone(foreign), structuredClone(foreign), structuredClone(foreign)] : [];
      const foreignCopy = foreignCopies[0] ?? structuredClone(foreign);
      const unchanged = renderModelView(foreignCopy, index, config);
      if (unchanged.messages !== foreignCopy) throw new Error(`no-change render did not return the same array: ${JSON.stringify(unchanged.stats)}`);
      const emptyIndex = rebuildIndex([]).index;

      const viewP50: number[] = [];
      const viewP95: number[] = [];
      const rtP50: number[] = [];
      const rtP95: number[] = [];
      const ncP50: number[] = [];
      const ncP95: number[] = [];
      const emP50: number[] = [];
      const afP50: number[] = [];
      const before = previousRequest(context);
      const foreignBefore = previousRequest(foreign);
      const refP50: number[] = [];
      const viewCpu: number[] = [];
      const rtCpu: number[] = [];
      const ncCpu: number[] = [];
      const calls = callsFor(size);
      // How PrunerRuntime.render rendered the requests of its series (untimed ones included).
      const reuse = { whole: 0, appended: 0, same: 0 };
      for (let r = 0; r < rounds; r++) {
        collectGarbage();
        const warm = Math.min(options.quick ? 3 : 20, calls);
        // Each timed call renders a fresh copy of the context right after the request before it
        // (the same context without its last turn, also a fresh copy, untimed), as Pi calls it.
        const fresh = () => structuredClone(context);
        // Each series holds its own render memo, as the runtime does: the request before is remembered.
        const viewMemo = createRenderMemo();
        const view = await sampleFresh(fresh, (m) => renderModelView(m, index, config, undefined, viewMemo), calls, warm, () => renderModelView(structuredClone(before), index, config, undefined, viewMemo));
        collectGarbage();
        const counted = { ...runtime.renderMemo.renders };
        const rt = await sampleFresh(fresh, (m) => runtime.render(m), calls, warm, () => runtime.render(structuredClone(before)));
        for (const key of ["whole", "appended", "same"] as const) reuse[key] += runtime.renderMemo.renders[key] - counted[key];
        collectGarbage();
        const ncMemo = createRenderMemo();
        const nc = await sampleFresh(() => structuredClone(foreign), (m) => renderModelView(m, index, config, undefined, ncMemo), calls, warm, () => renderModelView(structuredClone(foreignBefore), index, config, undefined, ncMemo));
        const emMemo = createRenderMemo();
        const em = await sampleFresh(fresh, (m) => renderModelView(m, emptyIndex, config, undefined, emMemo), calls, warm, () => renderModelView(structuredClone(before), emptyIndex, config, undefined, emMemo));
        // The first request after a flush: nothing remembered for the grown index.
        const af = await sampleFresh(fresh, (m) => renderWhole(m, index, config), Math.max(2, Math.ceil(calls / 4)), 1);
        afP50.push(quantile(af, 0.5));
        // Reference: one pass that reads each message's role and its content's first block, nothing else.
        const ref = sampleCalls((i) => referencePass(copies[i % 3]!), calls, warm);
        refP50.push(quantile(ref, 0.5));
        viewCpu.push(view.cpuPerCall!);
        rtCpu.push(rt.cpuPerCall!);
        ncCpu.push(nc.cpuPerCall!);
        viewP50.push(quantile(view, 0.5));
        viewP95.push(quantile(view, 0.95));
        rtP50.push(quantile(rt, 0.5));
        rtP95.push(quantile(rt, 0.95));
        ncP50.push(quantile(nc, 0.5));
        ncP95.push(quantile(nc, 0.95));
        emP50.push(quantile(em, 0.5));
      }
      // Per-step profile and the status-line size measure, on the same copies.
      const stepTimes: Record<string, number[]> = {};
      const stepTimesNoChange: Record<string, number[]> = {};
      for (const [name, stepConfig] of steps) {
        stepTimes[name] = sampleCalls((i) => renderWhole(copies[i % 3]!, index, stepConfig), calls, Math.min(20, calls));
        stepTimesNoChange[name] = sampleCalls((i) => renderWhole(foreignCopies[i % 3]!, index, stepConfig), calls, Math.min(20, calls));
      }
      // The status-line measure as PrunerRuntime runs it: sizes remembered from the previous request.
      const sizes = new RequestSizes();
      const rendered = copies.map((c) => renderModelView(c, index, config).messages);
      const sizeTimes = sampleCalls((i) => sizes.measure(copies[i % 3]!, rendered[i % 3]!), Math.max(3, Math.ceil(calls / 2)), 3);
      const fullSizeTimes = sampleCalls((i) => messagesChars(copies[i % 3]!) + messagesChars(rendered[i % 3]!), Math.max(3, Math.ceil(calls / 4)), 2);
      if (steps.length) {
        stepProfile[size] = Object.fromEntries(Object.entries(stepTimes).map(([n, t]) => [n, quantile(t, 0.5)]));
        stepProfile[size]!["status-line size measure (PrunerRuntime)"] = quantile(sizeTimes, 0.5);
        stepProfileNoChange[size] = Object.fromEntries(Object.entries(stepTimesNoChange).map(([n, t]) => [n, quantile(t, 0.5)]));
      }
      const at2000 = size === 2_000;
      const f = out.figures;
      f[`render.view.p50.${size}`] = spreadFigure(spread(viewP50), "ms", at2000 ? { target: { op: "<=", value: 2 } } : {});
      f[`render.view.p95.${size}`] = spreadFigure(spread(viewP95), "ms");
      f[`render.view.cpu.${size}`] = spreadFigure(spread(viewCpu), "ms", { note: "mean CPU time of this thread per call (not inflated by other load)" });
      f[`render.runtime.cpu.${size}`] = spreadFigure(spread(rtCpu), "ms", { note: "mean CPU time of this thread per call" });
      f[`render.nochange.cpu.${size}`] = spreadFigure(spread(ncCpu), "ms", { note: "mean CPU time of this thread per call" });
      f[`render.runtime.p50.${size}`] = spreadFigure(spread(rtP50), "ms", at2000 ? { target: { op: "<=", value: 2 } } : {});
      f[`render.runtime.p95.${size}`] = spreadFigure(spread(rtP95), "ms");
      f[`render.nochange.p50.${size}`] = spreadFigure(spread(ncP50), "ms", at2000 ? { target: { op: "<=", value: 0.3 }, note: "index of records none of which is in the messages: full scan, same array back" } : {});
      f[`render.nochange.p95.${size}`] = spreadFigure(spread(ncP95), "ms");
      f[`render.sizeMeasure.p50.${size}`] = figure(quantile(sizeTimes, 0.5), "ms", { note: "the status-line size measure PrunerRuntime.render adds (sizes remembered between requests)" });
      f[`render.sizeMeasureFull.p50.${size}`] = figure(quantile(fullSizeTimes, 0.5), "ms", { note: "the same measure computed from scratch: messagesChars of the raw and the rendered array" });
      f[`render.reference.p50.${size}`] = spreadFigure(spread(refP50), "ms", { note: "one pass reading each message's role and first content block" });
      f[`render.firstAfterFlush.p50.${size}`] = spreadFigure(spread(afP50), "ms", { note: "the whole render of a fresh copy with nothing remembered (the first request after the index grew)" });
      f[`render.emptyindex.p50.${size}`] = spreadFigure(spread(emP50), "ms", at2000 ? { target: { op: "<=", value: 0.3 }, note: "nothing pruned yet (empty index)" } : {});
      p50s.view!.push([size, spread(viewP50).median]);
      p50s.runtime!.push([size, spread(rtP50).median]);
      p50s.nochange!.push([size, spread(ncP50).median]);
      p50s.view95!.push([size, spread(viewP95).median]);
      p50s.reference!.push([size, spread(refP50).median]);
      p50s.runtime95!.push([size, spread(rtP95).median]);
      if (condense) await timePeers(size, entries, context, foreign, condense, calls, rounds, join(root, "peers"), out, options.log);
      const requests = reuse.whole + reuse.appended + reuse.same;
      out.notes.push(
        `render ${size}: of the ${requests} requests PrunerRuntime.render was handed in its series, ${reuse.appended} were rendered only where they went past the request before, ${reuse.same} reused it whole and ${reuse.whole} were rendered whole; each untimed request before a timed one is that one without its last turn, shorter than the request before it, so it is rendered whole by design (half the series)`,
      );
      rows.push({ size, calls, rounds, mix, stats: first.stats, reuse });
      options.log(`render ${size}: view p50 ${spread(viewP50).median.toFixed(3)} ms, runtime p50 ${spread(rtP50).median.toFixed(3)} ms, no-change ${spread(ncP50).median.toFixed(4)} ms (${JSON.stringify(mix)})`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  // Linear growth: time per message at each size, and a straight-line fit through the three points.
  for (const key of left.length ? [] : (["view", "runtime", "nochange", "reference"] as const)) {
    const pts = p50s[key]!;
    const fit = linearFit(pts.map((p) => p[0]), pts.map((p) => p[1]));
    const perMsg2k = pts[1]![1] / pts[1]![0];
    const perMsg20k = pts[2]![1] / pts[2]![0];
    out.figures[`render.${key}.growth.20000vs2000`] = figure(perMsg20k / perMsg2k, "ratio", { note: "per-message time at 20,000 ÷ at 2,000 (1 = linear)" });
    out.figures[`render.${key}.fit.r2`] = figure(fit.r2, "r²", { note: "straight-line fit of p50 against messages" });
    out.figures[`render.${key}.perThousand.20000`] = figure(perMsg20k * 1000, "ms per 1,000 messages");
  }
  const at2000 = sizes.indexOf(2_000);
  if (at2000 >= 0) out.figures["render.runtime.overhead.2000"] = figure(p50s.runtime![at2000]![1] / p50s.view![at2000]![1], "ratio", { note: "PrunerRuntime.render ÷ renderModelView, p50 at 2,000 messages" });
  out.data.rows = rows;
  out.data.steps = stepProfile;
  out.data.stepsNoChange = stepProfileNoChange;
  out.data.p50 = p50s;

  out.charts["render-latency.svg"] = lineChart({
    title: "Render latency per call (median of rounds)",
    xLabel: "messages in the branch (log scale)",
    yLabel: "milliseconds per call (log scale)",
    logX: true,
    logY: true,
    xTicks: [...sizes],
    markers: true,
    guides: [
      { y: 2, label: "target: p50 ≤ 2 ms at 2,000" },
      { y: 0.3, label: "target: no change ≤ 0.3 ms" },
    ],
    series: [
      { name: "renderModelView p50", points: p50s.view! },
      { name: "PrunerRuntime.render p50", points: p50s.runtime! },
      { name: "no change p50", points: p50s.nochange! },
      { name: "reference: one bare pass", points: p50s.reference!, color: "#7f7f7f" },
      { name: "renderModelView p95", points: p50s.view95!, dashed: true, color: "#1f77b4" },
      { name: "PrunerRuntime.render p95", points: p50s.runtime95!, dashed: true, color: "#d62728" },
    ],
  });
  return out;
}

/**
 * pi-pruner and pi-condense through their real entries on one fake `pi` each, on the same branch:
 * both rebuild their index from the same pruner entries (the two share the format) at
 * `session_start`, and the suite checks that both prune the same tool results. Rounds interleave
 * the two, call by call; every call gets a fresh copy right after the request before it.
 */
async function timePeers(size: number, entries: readonly AnyEntry[], context: readonly AgentMessage[], foreign: readonly AgentMessage[], condense: Awaited<ReturnType<typeof loadPiCondense>>, calls: number, rounds: number, root: string, out: SuiteOutput, log: (line: string) => void): Promise<void> {
  const peers: [string, DrivenExtension][] = [
    ["ours", await driveExtension(piPruner as (pi: unknown) => void, { root: join(root, "ours"), contextPrune: {} })],
    ["piCondense", await driveExtension(condense.factory, { root: join(root, "condense"), contextPrune: { enabled: true } })],
  ];
  const flushed = beforeLastFlush(entries);
  const pruned: Record<string, string[]> = {};
  for (const [name, peer] of peers) {
    peer.setBranch(entries);
    await peer.sessionStart();
    pruned[name] = prunedResults(context, await peer.context(structuredClone(context) as AgentMessage[]));
  }
  const ours = new Set(pruned.ours);
  const same = pruned.ours!.length === pruned.piCondense!.length && pruned.piCondense!.every((k) => ours.has(k));
  out.notes.push(`render ${size}: pi-pruner pruned ${pruned.ours!.length} tool results, pi-condense ${pruned.piCondense!.length}${same ? ", the same ones" : `; ${pruned.piCondense!.filter((k) => ours.has(k)).length} in common`}`);
  const before = previousRequest(context);
  const foreignBefore = previousRequest(foreign);
  const p50: Record<string, Record<string, number[]>> = {};
  const push = (name: string, kind: string, times: number[]) => ((p50[name] ??= {})[kind] ??= []).push(quantile(times, 0.5));
  const afterCalls = Math.max(2, Math.ceil(calls / 8));
  for (let r = 0; r < rounds; r++) {
    collectGarbage();
    const times: Record<string, Record<string, number[]>> = {};
    const add = (name: string, kind: string, ms: number) => ((times[name] ??= {})[kind] ??= []).push(ms);
    const timeOne = async (peer: DrivenExtension, list: readonly AgentMessage[]) => {
      const copy = structuredClone(list) as AgentMessage[];
      const t0 = performance.now();
      await peer.context(copy);
      return performance.now() - t0;
    };
    // Between two requests Pi waits for the model, so the event loop turns: what an extension
    // defers with a timer (pi-pruner bills the request for its money estimate) runs then, untimed.
    const between = () => new Promise<void>((resolve) => setImmediate(resolve));
    for (let i = 0; i < calls + 2; i++) {
      for (const [name, peer] of peers) {
        await peer.context(structuredClone(before));
        await between();
        const ms = await timeOne(peer, context);
        await between();
        await peer.context(structuredClone(foreignBefore));
        await between();
        const nc = await timeOne(peer, foreign);
        await between();
        if (i >= 2) {
          add(name, "context", ms);
          add(name, "nochange", nc);
        }
      }
    }
    // The first request after a flush: each extension rebuilt from the branch before its newest
    // flush has rendered the request before; then the flush's entries arrive (`session_tree`
    // rebuilds from the grown branch) and the next request is timed.
    for (let i = 0; i < afterCalls; i++) {
      for (const [name, peer] of peers) {
        peer.setBranch(flushed);
        await peer.sessionTree();
        await peer.context(structuredClone(before));
        await between();
        peer.setBranch(entries);
        await peer.sessionTree();
        add(name, "afterFlush", await timeOne(peer, context));
        await between();
      }
    }
    for (const [name] of peers) for (const [kind, list] of Object.entries(times[name]!)) push(name, kind, list);
  }
  const f = out.figures;
  const big = size >= 2_000;
  for (const kind of ["context", "nochange", "afterFlush"]) {
    const ours = spread(p50.ours![kind]!);
    const theirs = spread(p50.piCondense![kind]!);
    f[`render.peer.ours.${kind}.p50.${size}`] = spreadFigure(ours, "ms", { note: "pi-pruner's context handler, fresh copy per call" });
    f[`render.peer.piCondense.${kind}.p50.${size}`] = spreadFigure(theirs, "ms", { note: "pi-condense's context handler, fresh copy per call" });
    const ratios = p50.ours![kind]!.map((v, i) => v / p50.piCondense![kind]![i]!);
    const targeted = kind === "context" ? big : kind === "nochange" && size === 2_000;
    f[`render.peer.ratio.${kind}.${size}`] = spreadFigure(spread(ratios), "ratio", targeted ? { target: { op: "<=", value: 0.1 }, note: "pi-pruner ÷ pi-condense, p50 per round" } : { note: "pi-pruner ÷ pi-condense, p50 per round" });
  }
  log(`render ${size} peers: context ${spread(p50.ours!.context!).median.toFixed(3)} vs ${spread(p50.piCondense!.context!).median.toFixed(3)} ms, no change ${spread(p50.ours!.nochange!).median.toFixed(3)} vs ${spread(p50.piCondense!.nochange!).median.toFixed(3)} ms, first after flush ${spread(p50.ours!.afterFlush!).median.toFixed(3)} vs ${spread(p50.piCondense!.afterFlush!).median.toFixed(3)} ms${same ? "" : " (they prune different results)"}`);
}
