// pi-pruner for Pi: wires Pi's events to the pruner runtime. No logic worth testing lives here.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AnyEntry } from "@pi-pruner/core";
import { DEFAULT_CONFIG, estimateTokens, fileSpillStorage } from "@pi-pruner/core";
import { PrunerRuntime, type CommandOutcome, type RuntimeHost, type TurnEnd } from "./runtime.ts";
import { OnceReporter } from "./once-reporter.ts";
import { contextMessagesOf, protectsBy } from "./branch-context.ts";
import { persistEntries, withEntryDrafts } from "./entry-drafts.ts";
import { createSummarizer } from "./summarizer.ts";
import { registerQueryTool } from "./query-tool.ts";
import { registerCommands } from "./commands.ts";
import { loadPrunerSettings, settingsTarget, writePrunerSetting, type LoadedSettings } from "./settings.ts";
import { STATUS_KEY, statsReport, statusReport, statusText } from "./status.ts";
import { treeNodes, treeReport } from "./tree.ts";
import { registerSelfControl } from "./self-control/register.ts";
import { recordSettings } from "./settings-record.ts";
import { buildPiContext, nextSeqOf, renderWhole, visibleContext, type RenderStep } from "@pi-pruner/core";

export default function piPruner(pi: ExtensionAPI): void {
  let ui: ExtensionContext["ui"] | undefined;
  const reporter = new OnceReporter((message, level) => ui?.notify(message, level));
  let settings: LoadedSettings | undefined;
  const runtime = new PrunerRuntime(DEFAULT_CONFIG, reporter, { onCost: (cost) => pi.events.emit("cost:external", cost) });

  const branchOf = (ctx: ExtensionContext) => ctx.sessionManager.getBranch() as unknown as AnyEntry[];
  const spillOf = (ctx: ExtensionContext) => fileSpillStorage(ctx.sessionManager.getSessionFile(), ctx.sessionManager.getSessionId());
  const hostOf = (ctx: ExtensionContext): RuntimeHost => ({
    contextUsage: () => ctx.getContextUsage(),
    summarizer: () => createSummarizer(ctx, runtime.config),
    contextMessages: () => contextMessagesOf(branchOf(ctx), runtime.controls.read(branchOf(ctx)), runtime.config),
    controls: () => runtime.controls.read(branchOf(ctx)),
  });

  const loadSettings = (ctx: ExtensionContext) => {
    settings = loadPrunerSettings(ctx.cwd, ctx.isProjectTrusted());
    runtime.config = settings.config;
    runtime.applyWarnings(settings.warnings);
    recordSettingsOf(ctx);
  };
  // The branch records the settings its requests are rendered with (hidden from the model).
  const recordSettingsOf = (ctx: ExtensionContext) => recordSettings(pi, () => branchOf(ctx), runtime.config, reporter);
  const showStatus = (ctx: ExtensionContext) => ctx.ui.setStatus(STATUS_KEY, statusText(runtime.config, runtime.reclaim, runtime.bill.totals()));
  const settle = (ctx: ExtensionContext, outcome: CommandOutcome) => {
    persistEntries(pi, outcome.entries);
    showStatus(ctx);
    return outcome.message;
  };

  pi.on("session_start", (_event, ctx) => {
    // The UI first: an invalid setting is reported while the settings load.
    ui = ctx.ui;
    reporter.reset();
    runtime.useModel(ctx.model?.api);
    loadSettings(ctx);
    persistEntries(pi, runtime.startSession(branchOf(ctx), spillOf(ctx)));
    showStatus(ctx);
  });

  pi.on("session_tree", (_event, ctx) => {
    ui = ctx.ui;
    runtime.rebuild(branchOf(ctx), spillOf(ctx));
    recordSettingsOf(ctx);
    showStatus(ctx);
  });

  pi.on("turn_end", async (event, ctx) => {
    ui = ctx.ui;
    runtime.failOpen("turn metric", () => selfControl.live.onTurnEnd(ctx, event as unknown as TurnEnd), undefined);
    const drafts = withEntryDrafts(event.entries, await runtime.turnEnd(event as unknown as TurnEnd, hostOf(ctx)));
    // The model has answered: the requests so far can be billed now, for the status line.
    runtime.settleBill();
    showStatus(ctx);
    return drafts;
  });

  pi.on("context", (event, ctx) => {
    ui = ctx.ui;
    runtime.useModel(ctx.model?.api);
    const messages = event.messages as unknown as AgentMessage[];
    const controls = runtime.controls.read(branchOf(ctx));
    let rendered = runtime.render(messages, controls);
    rendered = runtime.failOpen("nudges", () => selfControl.live.onContext(ctx, controls, messages, rendered), rendered);
    if (rendered === messages) return;
    showStatus(ctx);
    return { messages: rendered as unknown as typeof event.messages };
  });

  registerQueryTool(pi, { index: () => runtime.index, spill: () => runtime.spill });

  const selfControl = registerSelfControl(pi, {
    config: () => runtime.config,
    branch: branchOf,
    controls: (ctx) => runtime.controls.read(branchOf(ctx)),
    nextSeq: (ctx) => nextSeqOf(branchOf(ctx)),
    visibleContext: (ctx) => {
      const branch = branchOf(ctx);
      return visibleContext(buildPiContext(branch), runtime.controls.read(branch), protectsBy(runtime.config));
    },
    renderSteps: (ctx) => {
      const branch = branchOf(ctx);
      const raw = contextMessagesOf(branch);
      const steps: { step: RenderStep; messages: readonly AgentMessage[] }[] = [];
      renderWhole(raw, runtime.index, runtime.config, runtime.controls.read(branch), (step, messages) => steps.push({ step, messages }));
      return { raw, steps };
    },
    // Unchanged by the render, the request is what Pi itself counts.
    sentTokens: (ctx) => (runtime.sentChars === undefined ? (ctx.getContextUsage()?.tokens ?? undefined) : estimateTokens(runtime.sentChars)),
    contextWindow: (ctx) => ctx.getContextUsage()?.contextWindow ?? ctx.model?.contextWindow,
  });

  registerCommands(pi, {
    config: () => runtime.config,
    reloadSettings: (ctx) => {
      loadSettings(ctx);
      showStatus(ctx);
    },
    settingsFile: (ctx) => settingsTarget(settings ?? loadPrunerSettings(ctx.cwd, ctx.isProjectTrusted())),
    writeSetting: writePrunerSetting,
    statusReport: () => statusReport(runtime.config, runtime.index, runtime.pendingCallCount(), runtime.reclaim, { rules: runtime.rules, decision: runtime.lastDecision }),
    statsReport: () => statsReport(runtime.index, runtime.settleBill()),
    treeReport: () => treeReport(runtime.index),
    treeNodes: () => treeNodes(runtime.index),
    flushNow: async (ctx) => settle(ctx, await runtime.flushCommand(hostOf(ctx))),
    compactNow: async (ctx) => settle(ctx, await runtime.compactCommand(hostOf(ctx))),
  }, selfControl.subcommands);
}
