// The settings a session records for its render (our `context-prune-settings` entry), and which
// settings a request was rendered with: the newest recorded before it, else the defaults of the
// writing extension's version when known, else today's. A settings edit must never rewrite what a
// past request is shown to have sent.
import type { AnyEntry, PersistEntry, SettingsData } from "../shapes/entries.ts";
import { isCustomEntryOf, PRUNE_SETTINGS } from "../shapes/entries.ts";
import { readSettingsData } from "../shapes/read-payloads.ts";
import { DEFAULT_CONFIG, mergeConfigLayers, validateConfig, type PruneConfig } from "../settings/config.ts";
import type { RenderConfig } from "../render/render.ts";
import type { SessionWriter } from "./session-writer.ts";

/**
 * The render-relevant part of a config as a `contextPrune` block: every key the render reads and
 * nothing else (self-control only by its switch), in a fixed order so two records compare as text.
 */
export function recordedConfig(config: RenderConfig): Record<string, unknown> {
  const chains = config.chainCompression ?? DEFAULT_CONFIG.chainCompression;
  const purge = config.purgeErrors ?? DEFAULT_CONFIG.purgeErrors;
  const strip = config.thinkingStrip ?? DEFAULT_CONFIG.thinkingStrip;
  const shell = config.userShell ?? DEFAULT_CONFIG.userShell;
  return {
    enabled: config.enabled,
    protectedTools: config.protectedTools.slice(),
    protectedPaths: config.protectedPaths.slice(),
    recoveryGraceTurns: config.recoveryGraceTurns,
    protectedResendShare: config.protectedResendShare ?? DEFAULT_CONFIG.protectedResendShare,
    cacheAware: config.cacheAware ?? DEFAULT_CONFIG.cacheAware,
    chainCompression: { enabled: chains.enabled, stripFinalAssistantThinking: chains.stripFinalAssistantThinking },
    purgeErrors: { enabled: purge.enabled, cooldownTurns: purge.cooldownTurns, minArgChars: purge.minArgChars },
    userShell: { enabled: shell.enabled, minChars: shell.minChars, afterPrompts: shell.afterPrompts },
    thinkingStrip: { enabled: strip.enabled, keepLastTurns: strip.keepLastTurns },
    selfControl: { enabled: (config.selfControl ?? DEFAULT_CONFIG.selfControl).enabled },
    [RESENDS_PROTECTED]: true,
  };
}

/**
 * Not a setting: a record carrying it was written by a pi-pruner that sends protected output again
 * after Pi's compaction. A record without it predates that, and its requests carried no such block.
 */
export const RESENDS_PROTECTED = "resendsProtectedAfterCompaction";

/** Whether the requests a settings record covers carried protected output again after Pi's compaction. */
export function recordResendsProtected(data: SettingsData): boolean {
  return data.config?.[RESENDS_PROTECTED] === true;
}

/**
 * The render defaults of each released pi-pruner version, as that version shipped them: a
 * session that records no settings of its own is rendered with its writer's defaults when its
 * version is listed here. A version's row never changes; a new default needs a new version.
 */
export const WRITER_DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  "0.1.0": {
    enabled: true,
    protectedTools: [],
    protectedPaths: ["**/skills/**/*.md"],
    recoveryGraceTurns: 3,
    protectedResendShare: 0.1,
    cacheAware: true,
    chainCompression: { enabled: true, stripFinalAssistantThinking: true },
    purgeErrors: { enabled: true, cooldownTurns: 2, minArgChars: 500 },
    userShell: { enabled: true, minChars: 2000, afterPrompts: 3 },
    thinkingStrip: { enabled: false, keepLastTurns: 16 },
    selfControl: { enabled: true },
  },
};

/** What a writer that never stubbed the person's shell output (pi-condense, a record older than the setting) rendered. */
const SHELL_OUTPUT_KEPT = { userShell: { enabled: false } } as const;

/**
 * The render defaults of pi-condense 2.x, for a session it wrote (it records no settings): its
 * DEFAULT_CONFIG protects the same skills and has the same recovery grace, chain and error-purge
 * defaults as pi-pruner 0.1.0's row (no thinking strip either), so that row stands for it, less
 * the stubs of the person's shell output (pi-condense sends it raw). Rewinds and shrinks on such a
 * session are pi-mulligan's, applied where they took effect (markersWereInert).
 */
const CONDENSE_DEFAULTS = { ...WRITER_DEFAULTS["0.1.0"]!, ...SHELL_OUTPUT_KEPT };

/**
 * The defaults a session is rendered with when it records no settings and another writer made it:
 * a session pi-condense wrote (and pi-pruner did not) is shown as pi-condense rendered it, never
 * with the settings in force today.
 */
export function foreignWriterDefaults(writer: SessionWriter): { writer: string; config: PruneConfig } | undefined {
  const names = writer.writers.map((w) => w.name);
  if (!names.includes("pi-condense") || names.includes("pi-pruner")) return undefined;
  return { writer: "pi-condense 2.x", config: mergeConfigLayers(DEFAULT_CONFIG, validateConfig(CONDENSE_DEFAULTS).config) };
}

/** The config a branch's views render with when it records none: its foreign writer's defaults, else `today`. */
export function configForWriter(writer: SessionWriter, today: RenderConfig): RenderConfig {
  return foreignWriterDefaults(writer)?.config ?? today;
}

/** A settings entry's payload, when the entry is one. */
export function settingsEntryData(entry: AnyEntry): SettingsData | undefined {
  if (!isCustomEntryOf(entry, PRUNE_SETTINGS)) return undefined;
  const data = readSettingsData(entry.data);
  return typeof data === "string" ? undefined : data;
}

/** The newest settings entry on a branch (root → leaf), with its payload. */
function newestSettingsEntry(branch: readonly AnyEntry[]): { entryId: string; data: SettingsData } | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const data = settingsEntryData(branch[i]!);
    if (data) return { entryId: branch[i]!.id, data };
  }
  return undefined;
}

/** The config a version's defaults give, or undefined for a version not listed. */
export function writerDefaultsOf(version: string | undefined): PruneConfig | undefined {
  const row = version === undefined ? undefined : WRITER_DEFAULTS[version];
  return row ? mergeConfigLayers(DEFAULT_CONFIG, validateConfig(row).config) : undefined;
}

/**
 * The config a settings entry records, read through the settings validator: a value it cannot
 * read falls back to the writer version's default (today's when the version is not listed), and
 * is named in `problems`.
 */
export function configOfRecord(data: SettingsData): { config: PruneConfig; problems: string[] } {
  const base = writerDefaultsOf(data.version) ?? DEFAULT_CONFIG;
  // A record written before the shell-output setting existed: its requests carried that output raw.
  const recorded = data.config && !("userShell" in data.config) ? { ...data.config, ...SHELL_OUTPUT_KEPT } : (data.config ?? {});
  const layer = validateConfig(recorded, "recorded");
  return { config: mergeConfigLayers(base, layer.config), problems: layer.warnings.map((w) => w.message) };
}

/**
 * The settings entry to append when the effective `config` of pi-pruner `version`, or the model's
 * `contextWindow` (what bounds the protected output re-sent after Pi's compaction), differs from
 * the newest one recorded on `branch` (or none is), else undefined. A new version is recorded
 * even with the same settings: what its defaults are follows from it.
 */
export function settingsToRecord(branch: readonly AnyEntry[], version: string | undefined, config: RenderConfig, contextWindow?: number): PersistEntry | undefined {
  const data: SettingsData = { ...(version !== undefined ? { version } : {}), config: recordedConfig(config), ...(contextWindow !== undefined ? { contextWindow } : {}) };
  const newest = newestSettingsEntry(branch);
  if (
    newest &&
    newest.data.version === version &&
    newest.data.contextWindow === data.contextWindow &&
    JSON.stringify(recordedConfig(configOfRecord(newest.data).config)) === JSON.stringify(data.config)
  ) {
    return undefined;
  }
  return { kind: "custom", customType: PRUNE_SETTINGS, data };
}

/** The context window the newest settings record on `branch` names, if any: what the next request's re-sent protected output is bounded by. */
export function recordedContextWindow(branch: readonly AnyEntry[]): number | undefined {
  return newestSettingsEntry(branch)?.data.contextWindow;
}
