// `/pruner <subcommand>`: status, control and settings. Every settings change goes through core's
// one settings writer, then the effective settings are read back from the files.
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { DEFAULT_CONFIG, THINKING_LEVELS, validateConfig, type ChainCompressionResult, type FlushResult, type PruneConfig } from "@pi-pruner/core";
import { SettingsFileError } from "@pi-pruner/core";
import type { TreeNode } from "./tree-model.ts";
import { showTree } from "./tree-view.ts";

export interface CommandHost {
  config(): PruneConfig;
  /** Re-reads the settings files and applies them. */
  reloadSettings(ctx: ExtensionCommandContext): void;
  /** The file a `/pruner` setting change is written to. */
  settingsFile(ctx: ExtensionCommandContext): string;
  writeSetting(file: string, keyPath: string[], value: unknown): boolean;
  statusReport(): string;
  statsReport(): string;
  treeReport(): string;
  treeNodes(): TreeNode[];
  flushNow(ctx: ExtensionCommandContext): Promise<FlushNowOutcome>;
  /** Summarizes what is pending, then compresses every closed chain not compressed yet. */
  compactNow(ctx: ExtensionCommandContext): Promise<CompactOutcome>;
}

/** What `/pruner now` did: found nothing pending, could not run (another flush was under way), or flushed. */
export type FlushNowOutcome = { kind: "nothing-pending" } | { kind: "not-run" } | { kind: "flushed"; flushed: FlushResult };

/** What `/pruner compact` did: refused (pruning or chain compression off), or ran, compressing what it found. */
export type CompactOutcome = { kind: "pruning-off" } | { kind: "compression-off" } | { kind: "ran"; compressed: ChainCompressionResult | undefined };

/** The line `/pruner now` answers with. */
export function flushReply(outcome: FlushNowOutcome): string {
  if (outcome.kind === "nothing-pending") return "pi-pruner: nothing pending to summarize";
  if (outcome.kind === "not-run") return "pi-pruner: flush did not run";
  const counts = outcome.flushed.outcomes.map((o) => `${o.outcome}${o.refs.length ? ` ${o.refs.join(",")}` : ""}`);
  return `pi-pruner: flushed ${outcome.flushed.outcomes.length} batch(es): ${counts.join("; ") || "nothing new"}`;
}

/** The line `/pruner compact` answers with. */
export function compactReply(outcome: CompactOutcome): string {
  if (outcome.kind === "pruning-off") return "pi-pruner is off (/pruner on)";
  if (outcome.kind === "compression-off") return "pi-pruner: chain compression is off (chainCompression.enabled)";
  const compressed = outcome.compressed;
  if (!compressed?.chains.length) return "pi-pruner: no closed chain left to compress";
  const fused = compressed.rangesSummarized ? `, ${compressed.rangesSummarized} with a fused range summary` : "";
  return `pi-pruner: compressed ${compressed.chains.length} chain(s): ${compressed.chains.map((c) => c.blockId).join(", ")}${fused}`;
}

export interface Subcommand {
  description: string;
  completions?: () => string[];
  run(args: string, ctx: ExtensionCommandContext, host: CommandHost): Promise<void> | void;
}

/** Settings the overlay and the subcommands can edit, as dotted key paths. */
export const EDITABLE_KEYS: string[] = (() => {
  const keys: string[] = [];
  for (const [key, value] of Object.entries(DEFAULT_CONFIG)) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      for (const nested of Object.keys(value)) keys.push(`${key}.${nested}`);
    } else keys.push(key);
  }
  return keys;
})();

function readKey(config: PruneConfig, dotted: string): unknown {
  let value: unknown = config;
  for (const part of dotted.split(".")) value = (value as Record<string, unknown>)?.[part];
  return value;
}

/** Parses what a person typed: JSON when it parses (numbers, booleans, null, arrays), else the text. */
function parseSettingValue(text: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
}

/** Validates one key's new value with core's rules; returns the problem or undefined. */
function validateSetting(dotted: string, value: unknown): string | undefined {
  const parts = dotted.split(".");
  const block: Record<string, unknown> = {};
  if (parts.length === 1) block[parts[0]!] = value;
  else block[parts[0]!] = { [parts[1]!]: value };
  const { warnings } = validateConfig(block, "command");
  return warnings[0]?.message;
}

function notifyError(ctx: ExtensionCommandContext, error: unknown): void {
  const message = error instanceof SettingsFileError ? error.message : `could not save the setting: ${(error as Error).message}`;
  ctx.ui.notify(`pi-pruner: ${message}`, "error");
}

/** Validates, writes and reloads; one path for every setting change. */
function changeSetting(ctx: ExtensionCommandContext, host: CommandHost, dotted: string, value: unknown): boolean {
  if (!EDITABLE_KEYS.includes(dotted)) {
    ctx.ui.notify(`pi-pruner: unknown setting "${dotted}"`, "error");
    return false;
  }
  const problem = validateSetting(dotted, value);
  if (problem) {
    ctx.ui.notify(`pi-pruner: not saved — ${problem}`, "error");
    return false;
  }
  const file = host.settingsFile(ctx);
  try {
    host.writeSetting(file, dotted.split("."), value);
  } catch (error) {
    notifyError(ctx, error);
    return false;
  }
  host.reloadSettings(ctx);
  ctx.ui.notify(`pi-pruner: ${dotted} = ${JSON.stringify(readKey(host.config(), dotted))} (saved to ${file})`, "info");
  return true;
}

function listSetting(key: "protectedTools" | "protectedPaths"): Subcommand {
  return {
    description: `${key === "protectedTools" ? "tool names" : "path globs"} kept verbatim (no argument: prompt; "none" clears)`,
    async run(args, ctx, host) {
      let text = args.trim();
      if (!text) {
        const current = host.config()[key].join(", ");
        const answer = await ctx.ui.input(`${key} (comma-separated, "none" to clear)`, current);
        if (answer === undefined) return;
        text = answer.trim();
      }
      const list = text === "none" ? [] : text.split(/[,\s]+/).map((s) => s.trim()).filter(Boolean);
      changeSetting(ctx, host, key, list);
    },
  };
}

function toggle(key: "enabled" | "dedupByContentHash", on: boolean | undefined): Subcommand["run"] {
  return (args, ctx, host) => {
    const word = args.trim();
    if (on === undefined && (word === "" || word === "status")) {
      ctx.ui.notify(`pi-pruner: ${key} is ${host.config()[key] ? "on" : "off"}`, "info");
      return;
    }
    const value = on ?? (word === "on" ? true : word === "off" ? false : undefined);
    if (value === undefined) {
      ctx.ui.notify(`pi-pruner: expected on, off or status`, "error");
      return;
    }
    changeSetting(ctx, host, key, value);
  };
}

async function settingsOverlay(ctx: ExtensionCommandContext, host: CommandHost): Promise<void> {
  const config = host.config();
  const rows = EDITABLE_KEYS.map((key) => `${key} = ${JSON.stringify(readKey(config, key))}`);
  const picked = await ctx.ui.select("pi-pruner settings (pick one to change)", rows);
  if (!picked) return;
  const key = picked.slice(0, picked.indexOf(" = "));
  const answer = await ctx.ui.input(`${key} (JSON value)`, JSON.stringify(readKey(config, key)));
  if (answer === undefined) return;
  changeSetting(ctx, host, key, parseSettingValue(answer));
}

const BASE_SUBCOMMANDS: Record<string, Subcommand> = {
  status: { description: "state, sizes and settings", run: (_a, ctx, host) => ctx.ui.notify(host.statusReport(), "info") },
  stats: { description: "summarizer calls, tokens, cost, and the billed input with and without pruning", run: (_a, ctx, host) => ctx.ui.notify(host.statsReport(), "info") },
  on: { description: "turn pruning on", run: toggle("enabled", true) },
  off: { description: "turn pruning off (the model sees raw outputs again)", run: toggle("enabled", false) },
  now: {
    description: "summarize every pending batch now",
    async run(_a, ctx, host) {
      ctx.ui.notify(flushReply(await host.flushNow(ctx)), "info");
    },
  },
  compact: {
    description: "compress every closed chain now, ignoring the rolling window",
    async run(_a, ctx, host) {
      ctx.ui.notify(compactReply(await host.compactNow(ctx)), "info");
    },
  },
  tree: { description: "summaries and the calls they pruned (foldable)", run: (_a, ctx, host) => showTree(ctx, host.treeNodes(), () => host.treeReport()) },
  settings: { description: "edit any setting", run: (_a, ctx, host) => settingsOverlay(ctx, host) },
  model: {
    description: 'summarizer model: "default" or provider/model-id',
    async run(args, ctx, host) {
      let value = args.trim();
      if (!value) {
        const answer = await ctx.ui.input("summarizer model (default or provider/model-id)", host.config().summarizerModel);
        if (answer === undefined) return;
        value = answer.trim();
      }
      changeSetting(ctx, host, "summarizerModel", value);
    },
  },
  thinking: {
    description: `summarizer thinking: ${THINKING_LEVELS.join(", ")}`,
    completions: () => [...THINKING_LEVELS],
    async run(args, ctx, host) {
      let value = args.trim();
      if (!value) {
        const answer = await ctx.ui.select("summarizer thinking", [...THINKING_LEVELS]);
        if (!answer) return;
        value = answer;
      }
      changeSetting(ctx, host, "summarizerThinking", value);
    },
  },
  "protected-tools": listSetting("protectedTools"),
  "protected-paths": listSetting("protectedPaths"),
  "min-batch-chars": {
    description: "skip batches smaller than this many characters",
    run(args, ctx, host) {
      const n = Number(args.trim());
      if (!args.trim() || !Number.isFinite(n)) {
        ctx.ui.notify(`pi-pruner: minBatchChars is ${host.config().minBatchChars}; give a number to change it`, "info");
        return;
      }
      changeSetting(ctx, host, "minBatchChars", n);
    },
  },
  dedup: { description: "content-hash dedup: on, off or status", completions: () => ["on", "off", "status"], run: toggle("dedupByContentHash", undefined) },
  help: { description: "this list", run: (_a, ctx) => ctx.ui.notify(helpText(), "info") },
};

/** The `/pruner` subcommands of the settings and the pruner itself. */
const SUBCOMMANDS: Record<string, Subcommand> = BASE_SUBCOMMANDS;

function helpText(table: Record<string, Subcommand> = SUBCOMMANDS): string {
  return ["/pruner <subcommand>:", ...Object.entries(table).map(([name, s]) => `  ${name.padEnd(16)} ${s.description}`)].join("\n");
}

/** `extra`: subcommands of other parts of the extension (the self-control checkpoints and audit). */
export function registerCommands(pi: ExtensionAPI, host: CommandHost, extra: Record<string, Subcommand> = {}): void {
  const SUBCOMMANDS: Record<string, Subcommand> = { ...BASE_SUBCOMMANDS, ...extra };
  SUBCOMMANDS.help = { description: "this list", run: (_a, ctx) => ctx.ui.notify(helpText(SUBCOMMANDS), "info") };
  pi.registerCommand("pruner", {
    description: "pi-pruner: status, now, tree, settings, protected-paths … (/pruner help)",
    getArgumentCompletions(prefix: string) {
      const [name, ...rest] = prefix.split(/\s+/);
      if (rest.length === 0) {
        const items = Object.keys(SUBCOMMANDS)
          .filter((n) => n.startsWith(name ?? ""))
          .map((n) => ({ value: n, label: n, description: SUBCOMMANDS[n]!.description }));
        return items.length ? items : null;
      }
      const options = SUBCOMMANDS[name!]?.completions?.() ?? [];
      const last = rest[rest.length - 1] ?? "";
      const items = options.filter((o) => o.startsWith(last)).map((o) => ({ value: `${name} ${o}`, label: o }));
      return items.length ? items : null;
    },
    async handler(args, ctx) {
      const trimmed = (args ?? "").trim();
      const space = trimmed.indexOf(" ");
      const name = (space < 0 ? trimmed : trimmed.slice(0, space)) || "status";
      const rest = space < 0 ? "" : trimmed.slice(space + 1);
      const sub = SUBCOMMANDS[name];
      if (!sub) {
        ctx.ui.notify(`pi-pruner: unknown subcommand "${name}"\n${helpText(SUBCOMMANDS)}`, "error");
        return;
      }
      try {
        await sub.run(rest, ctx, host);
      } catch (error) {
        ctx.ui.notify(`pi-pruner: /pruner ${name} failed: ${(error as Error).message}`, "error");
      }
    },
  });
}

