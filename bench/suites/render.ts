// Figure 1: render latency — the `context` transform on generated branches of 200, 2,000 and
// 20,000 messages, as `renderModelView` alone and as `PrunerRuntime.render` (what the extension's
// `context` handler runs, including the status-line size measure), plus the no-change path.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { renderModelView, type RenderConfig } from "../../core/src/render/render.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { rebuildIndex, findCallForResult } from "../../core/src/prune/prune-index.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { isProtected } from "../../core/src/settings/protection.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { OnceReporter, PrunerRuntime, RequestSizes } from "../../pi-extension/src/runtime.ts";
import { generateSession } from "../lib/sessions.ts";
import { collectGarbage, linearFit, quantile, sampleCalls, spread } from "../lib/stats.ts";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { lineChart } from "../lib/svg.ts";
import type { AnyEntry } from "../../core/src/shapes/entries.ts";
import { messagesChars } from "../../core/src/shapes/size.ts";

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
  log: (line: string) => void;
}

const SIZES = [200, 2_000, 20_000];

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
  const callsFor = (n: number) => (options.quick ? (n <= 200 ? 200 : n <= 2000 ? 40 : 4) : n <= 200 ? 1500 : n <= 2000 ? 300 : 40);
  const config = DEFAULT_CONFIG;
  const rows: Record<string, unknown>[] = [];
  // The per-step profile is left out of quick runs.
  const steps = options.quick ? [] : stepConfigs();
  const stepProfile: Record<string, Record<string, number>> = {};
  const stepProfileNoChange: Record<string, Record<string, number>> = {};
  const p50s: Record<string, [number, number][]> = { view: [], runtime: [], nochange: [], view95: [], runtime95: [], reference: [] };

  for (const size of SIZES) {
    const root = mkdtempSync(join(tmpdir(), "pprb-render-"));
    try {
      const { host } = await generateSession({ root, seed: 11, messages: size });
      const entries = host.entries;
      const context = buildPiContext(entries).map((c) => c.message);
      const { index } = rebuildIndex(entries);
      const mix = mixOf(context, entries);
      // Pi hands the handler a fresh deep copy each time; rotate a few copies so no call runs on the previous call's warm objects only.
      const copies = [structuredClone(context), structuredClone(context), structuredClone(context)];
      const runtime = new PrunerRuntime(config, new OnceReporter(() => {}));
      runtime.rebuild(entries);
      const first = renderModelView(copies[0]!, index, config);
      if (first.messages === copies[0]) options.log(`render: ${size} messages rendered unchanged (unexpected for this mix)`);

      const foreign = withNothingToDo(context);
      const foreignCopies = [structuredClone(foreign), structuredClone(foreign), structuredClone(foreign)];
      const unchanged = renderModelView(foreignCopies[0]!, index, config);
      if (unchanged.messages !== foreignCopies[0]) throw new Error(`no-change render did not return the same array: ${JSON.stringify(unchanged.stats)}`);
      const emptyIndex = rebuildIndex([]).index;

      const viewP50: number[] = [];
      const viewP95: number[] = [];
      const rtP50: number[] = [];
      const rtP95: number[] = [];
      const ncP50: number[] = [];
      const ncP95: number[] = [];
      const emP50: number[] = [];
      const refP50: number[] = [];
      const viewCpu: number[] = [];
      const rtCpu: number[] = [];
      const ncCpu: number[] = [];
      const calls = callsFor(size);
      for (let r = 0; r < rounds; r++) {
        collectGarbage();
        const warm = Math.min(options.quick ? 3 : 20, calls);
        const view = sampleCalls((i) => renderModelView(copies[i % 3]!, index, config), calls, warm);
        collectGarbage();
        const rt = sampleCalls((i) => runtime.render(copies[i % 3]!), calls, warm);
        collectGarbage();
        const nc = sampleCalls((i) => renderModelView(foreignCopies[i % 3]!, index, config), calls, warm);
        const em = sampleCalls((i) => renderModelView(copies[i % 3]!, emptyIndex, config), calls, warm);
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
        stepTimes[name] = sampleCalls((i) => renderModelView(copies[i % 3]!, index, stepConfig), calls, Math.min(20, calls));
        stepTimesNoChange[name] = sampleCalls((i) => renderModelView(foreignCopies[i % 3]!, index, stepConfig), calls, Math.min(20, calls));
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
      f[`render.emptyindex.p50.${size}`] = spreadFigure(spread(emP50), "ms", at2000 ? { target: { op: "<=", value: 0.3 }, note: "nothing pruned yet (empty index)" } : {});
      p50s.view!.push([size, spread(viewP50).median]);
      p50s.runtime!.push([size, spread(rtP50).median]);
      p50s.nochange!.push([size, spread(ncP50).median]);
      p50s.view95!.push([size, spread(viewP95).median]);
      p50s.reference!.push([size, spread(refP50).median]);
      p50s.runtime95!.push([size, spread(rtP95).median]);
      rows.push({ size, calls, rounds, mix, stats: first.stats });
      options.log(`render ${size}: view p50 ${spread(viewP50).median.toFixed(3)} ms, runtime p50 ${spread(rtP50).median.toFixed(3)} ms, no-change ${spread(ncP50).median.toFixed(4)} ms (${JSON.stringify(mix)})`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  // Linear growth: time per message at each size, and a straight-line fit through the three points.
  for (const key of ["view", "runtime", "nochange", "reference"] as const) {
    const pts = p50s[key]!;
    const fit = linearFit(pts.map((p) => p[0]), pts.map((p) => p[1]));
    const perMsg2k = pts[1]![1] / pts[1]![0];
    const perMsg20k = pts[2]![1] / pts[2]![0];
    out.figures[`render.${key}.growth.20000vs2000`] = figure(perMsg20k / perMsg2k, "ratio", { note: "per-message time at 20,000 ÷ at 2,000 (1 = linear)" });
    out.figures[`render.${key}.fit.r2`] = figure(fit.r2, "r²", { note: "straight-line fit of p50 against messages" });
    out.figures[`render.${key}.perThousand.20000`] = figure(perMsg20k * 1000, "ms per 1,000 messages");
  }
  out.figures["render.runtime.overhead.2000"] = figure(p50s.runtime![1]![1] / p50s.view![1]![1], "ratio", { note: "PrunerRuntime.render ÷ renderModelView, p50 at 2,000 messages" });
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
    xTicks: SIZES,
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
