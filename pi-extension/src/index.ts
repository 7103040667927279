// pi-pruner for Pi: wires Pi's events to the pruner runtime. No logic worth testing lives here.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "@pi-pruner/core";
import type { AnyEntry } from "@pi-pruner/core";
import { DEFAULT_CONFIG } from "@pi-pruner/core";
import { buildPiContext } from "@pi-pruner/core";
import type { FlushResult, PersistEntry, SpillIO } from "@pi-pruner/core";
import { OnceReporter, PrunerRuntime } from "./runtime.ts";
import { createSummarizer } from "./summarizer.ts";
import { blobsDirFor } from "@pi-pruner/core";
import { registerQueryTool } from "./query-tool.ts";
import { registerCommands } from "./commands.ts";
import { loadPrunerSettings, settingsTarget, writePrunerSetting, type LoadedSettings } from "./settings.ts";
import { STATUS_KEY, statsReport, statusReport, statusText } from "./status.ts";
import { treeNodes, treeReport } from "./tree.ts";

type Drafts = { type: "custom"; customType: string; data: unknown } | { type: "custom_message"; customType: string; content: string; display: boolean; details: unknown };

function toDrafts(entries: readonly PersistEntry[]): Drafts[] {
  return entries.map((e) =>
    e.kind === "custom"
      ? { type: "custom", customType: e.customType, data: e.data }
      : { type: "custom_message", customType: e.customType, content: e.content, display: false, details: e.details },
  );
}

export default function piPruner(pi: ExtensionAPI): void {
  let ui: ExtensionContext["ui"] | undefined;
  const reporter = new OnceReporter((message, level) => ui?.notify(message, level));
  let settings: LoadedSettings | undefined;
  const runtime = new PrunerRuntime(DEFAULT_CONFIG, reporter);
  let session: { file?: string; id?: string } = {};

  const blobsDir = () => (session.file && session.id ? blobsDirFor(session.file, session.id) : undefined);

  const spillIO: SpillIO = {
    writeSidecar(call) {
      const dir = blobsDir();
      if (!dir) throw new Error("this session has no directory on disk");
      mkdirSync(dir, { recursive: true });
      const safeId = call.toolCallId.replace(/[^A-Za-z0-9_.-]/g, "_");
      const path = join(dir, `${safeId}-${call.resultTimestamp}.txt`);
      writeFileSync(path, call.resultText, "utf8");
      return path;
    },
  };

  const loadSettings = (ctx: ExtensionContext) => {
    settings = loadPrunerSettings(ctx.cwd, ctx.isProjectTrusted());
    runtime.config = settings.config;
    runtime.applyWarnings(settings.warnings);
  };

  const showStatus = (ctx: ExtensionContext) => ctx.ui.setStatus(STATUS_KEY, statusText(runtime.config, runtime.reclaim));

  const rebuild = (ctx: ExtensionContext) => {
    ui = ctx.ui;
    session = { file: ctx.sessionManager.getSessionFile(), id: ctx.sessionManager.getSessionId() };
    runtime.rebuild(ctx.sessionManager.getBranch() as unknown as AnyEntry[]);
    runtime.reclaim = undefined;
    showStatus(ctx);
  };

  // Summarizer spending, for extensions that total a session's cost (cumulative per session).
  const emitCost = (result: Pick<FlushResult, "usage"> | undefined) => {
    if (!result || !(result.usage.cost || result.usage.input || result.usage.output)) return;
    const stats = runtime.index.stats;
    pi.events.emit("cost:external", {
      source: "pi-pruner",
      cost: result.usage.cost,
      inputTokens: result.usage.input,
      outputTokens: result.usage.output,
      totalCost: stats.totalCost ?? result.usage.cost,
    });
  };

  /** The messages Pi builds for the current branch (after its own compaction): what chains are found in. */
  const contextMessages = (ctx: ExtensionContext): AgentMessage[] =>
    buildPiContext(ctx.sessionManager.getBranch() as unknown as AnyEntry[]).map((c) => c.message);

  const persist = (entries: readonly PersistEntry[]) => {
    for (const e of entries) {
      if (e.kind === "custom") pi.appendEntry(e.customType, e.data);
      else pi.sendMessage({ customType: e.customType, content: e.content, display: false, details: e.details });
    }
  };

  pi.on("session_start", (_event, ctx) => {
    reporter.reset();
    loadSettings(ctx);
    rebuild(ctx);
    try {
      persist(runtime.spillPending(spillIO));
    } catch (error) {
      reporter.report(`respill:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
    }
  });

  pi.on("session_tree", (_event, ctx) => rebuild(ctx));

  pi.on("turn_end", async (event, ctx) => {
    ui = ctx.ui;
    try {
      const message = event.message as unknown as AgentMessage;
      if (message.role !== "assistant" || !runtime.config.enabled) return;
      const results = event.toolResults as unknown as ToolResultMessage[];
      const entries: PersistEntry[] = [];
      let reason: string | undefined;
      if (results.length) {
        entries.push(...runtime.captureTurn(message as AssistantMessage, results, event.turnIndex, spillIO));
        const usage = ctx.getContextUsage();
        reason = runtime.budgetTrigger(usage?.tokens, usage?.contextWindow);
      } else if (event.outcome === "completed" && runtime.config.pruneOn === "agent-message") {
        reason = "final-reply";
      }
      const summarizer = reason ? createSummarizer(ctx, runtime.config) : undefined;
      if (summarizer && runtime.hasPending()) {
        const flushed = await runtime.flush(summarizer);
        if (flushed) entries.push(...flushed.entries);
        emitCost(flushed);
      }
      // A chain just closed: Pi has already appended this reply to the branch, so the newest chain
      // reads as closed. After the flush, so the chain's own batches are summarized first.
      if (reason === "final-reply") {
        const compressed = await runtime.compressChains(contextMessages(ctx), summarizer);
        if (compressed) entries.push(...compressed.entries);
        emitCost(compressed);
      }
      if (!entries.length) return;
      return { entries: [...event.entries, ...toDrafts(entries)] };
    } catch (error) {
      reporter.report(`turn_end:${(error as Error).message}`, `pi-pruner: ${(error as Error).message}`, "error");
      return;
    }
  });

  pi.on("context", (event, ctx) => {
    ui = ctx.ui;
    const messages = event.messages as unknown as AgentMessage[];
    const rendered = runtime.render(messages);
    if (rendered === messages) return;
    showStatus(ctx);
    return { messages: rendered as unknown as typeof event.messages };
  });

  registerQueryTool(pi, { index: () => runtime.index, session: () => session });

  registerCommands(pi, {
    config: () => runtime.config,
    reloadSettings: (ctx) => {
      loadSettings(ctx);
      showStatus(ctx);
    },
    settingsFile: (ctx) => settingsTarget(settings ?? loadPrunerSettings(ctx.cwd, ctx.isProjectTrusted())),
    writeSetting: writePrunerSetting,
    statusReport: () => statusReport(runtime.config, runtime.index, runtime.pending.reduce((n, b) => n + b.calls.length, 0), runtime.reclaim),
    statsReport: () => statsReport(runtime.index),
    treeReport: () => treeReport(runtime.index),
    treeNodes: () => treeNodes(runtime.index),
    async flushNow(ctx) {
      if (!runtime.hasPending()) return "pi-pruner: nothing pending to summarize";
      const result = await runtime.flush(createSummarizer(ctx, runtime.config));
      if (!result) return "pi-pruner: flush did not run";
      persist(result.entries);
      emitCost(result);
      showStatus(ctx);
      const counts = result.outcomes.map((o) => `${o.outcome}${o.refs.length ? ` ${o.refs.join(",")}` : ""}`);
      return `pi-pruner: flushed ${result.outcomes.length} batch(es): ${counts.join("; ") || "nothing new"}`;
    },
    async compactNow(ctx) {
      if (!runtime.config.enabled) return "pi-pruner is off (/pruner on)";
      if (!runtime.config.chainCompression.enabled) return "pi-pruner: chain compression is off (chainCompression.enabled)";
      const summarizer = createSummarizer(ctx, runtime.config);
      const entries: PersistEntry[] = [];
      // Pending batches first, so the chains about to be compressed have their summaries.
      if (runtime.hasPending()) {
        const flushed = await runtime.flush(summarizer);
        if (flushed) entries.push(...flushed.entries);
        emitCost(flushed);
      }
      const compressed = await runtime.compressChains(contextMessages(ctx), summarizer, { all: true });
      if (compressed) entries.push(...compressed.entries);
      emitCost(compressed);
      persist(entries);
      showStatus(ctx);
      if (!compressed?.chains.length) return "pi-pruner: no closed chain left to compress";
      const fused = compressed.rangesSummarized ? `, ${compressed.rangesSummarized} with a fused range summary` : "";
      return `pi-pruner: compressed ${compressed.chains.length} chain(s): ${compressed.chains.map((c) => c.blockId).join(", ")}${fused}`;
    },
  });
}
