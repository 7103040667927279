// The `contextPrune` settings block: defaults, validation that never throws, and the deep merge of
// the global (<agentDir>/settings.json) and project (<cwd>/.pi/settings.json) blocks.
import { isRecord } from "../shapes/json.ts";
import { formatNumber } from "../shapes/size.ts";
import { checkGlobPattern, GLOB_BOUNDS } from "./protection.ts";

export const SETTINGS_KEY = "contextPrune";

// Pi 1.6 also knows "max"; "default" means the session's own level.
export const THINKING_LEVELS = ["default", "off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
type ThinkingLevel = (typeof THINKING_LEVELS)[number];

export const PRUNE_ON_MODES = ["agent-message", "on-demand"] as const;
type PruneOn = (typeof PRUNE_ON_MODES)[number];

interface ChainCompressionConfig {
  enabled: boolean;
  rollingWindow: number;
  fuseRangeSummary: boolean;
  stripFinalAssistantThinking: boolean;
}

interface PurgeErrorsConfig {
  enabled: boolean;
  cooldownTurns: number;
  minArgChars: number;
}

/** The output of the person's own shell commands (`!cmd`), which Pi sends as a user message. */
interface UserShellConfig {
  enabled: boolean;
  /** Output of fewer characters stays as Pi sends it. */
  minChars: number;
  /** User prompts that must follow the command (up to the newest flush under `cacheAware`) before its output becomes a stub. */
  afterPrompts: number;
}

interface ThinkingStripConfig {
  enabled: boolean;
  keepLastTurns: number;
}

/** The agent's own rewind, shrink, cancel and audit tools, their guards and nudges. */
export interface SelfControlConfig {
  enabled: boolean;
  /** Active rewind markers on a branch at most; a further rewind is refused. */
  maxActiveRewinds: number;
  /** Rewinds that may land back at the same user prompt before the next one is refused. */
  maxRewindsPerPrompt: number;
  /** A rewind is refused once the rendered context reaches this fraction of the window. */
  refuseRewindAtFraction: number;
  /** The rewind's result warns when the hidden span wrote files or ran side-effecting commands. */
  mutationWarning: boolean;
  /** Active shrinks at most; past it the oldest is retired. */
  maxActiveShrinks: number;
  /** A shrink whose target is absent from this many renders in a row is retired. */
  shrinkStaleAfterRenders: number;
  /** Characters of a shrink's replacement shown to the person (the model never sees the echo). */
  notifyMaxChars: number;
  bloatReminder: boolean;
  /** Bytes of one tool result above which the reminder is appended to it. */
  bloatThresholdBytes: number;
  /** Per-tool thresholds; a tool not listed uses bloatThresholdBytes. */
  bloatThresholdBytesByTool: Record<string, number>;
  driftNudge: boolean;
  /** Average agent-attributable growth per turn, over driftWindowTurns, at or above which the nudge rides the next request. */
  driftThresholdTokens: number;
  driftWindowTurns: number;
  /** null = off; else the fraction of the window whose first crossing adds a one-time note. */
  highWaterFraction: number | null;
  /** The line above the editor while a checkpoint is set. */
  checkpointLine: boolean;
}

export interface PruneConfig {
  enabled: boolean;
  pruneOn: PruneOn;
  /** "default" = the session's model, else "provider/model-id". */
  summarizerModel: string;
  summarizerThinking: ThinkingLevel;
  /** Silence on the summarizer's stream before it is abandoned. */
  summarizerIdleTimeoutMs: number;
  /** Overall ceiling for one summarizer call. */
  summarizerTimeoutMs: number;
  protectedTools: string[];
  protectedPaths: string[];
  /**
   * The share of the model's context window that protected output re-sent after Pi's compaction
   * may take at most, a fraction in (0, 1]: the newest outputs that fit, the rest named for
   * context_tree_query.
   */
  protectedResendShare: number;
  spillThreshold: number;
  spillPreviewBytes: number;
  minBatchChars: number;
  /** Characters of each tool output the summarizer is sent at most (the lines that matter, not a head cut). */
  summarizerInputChars: number;
  dedupByContentHash: boolean;
  quietOversizedSkips: boolean;
  /** null = off; else a fraction of the context window in (0, 1]. */
  autoBudgetThreshold: number | null;
  /** null = off; else a fraction of the context window in (0, 1]. */
  budgetTurnDelta: number | null;
  /** User turns during which recovered output is not re-stubbed. */
  recoveryGraceTurns: number;
  /**
   * Flush when the saving pays for rewriting the provider's cached prefix (mid-task included, and
   * always before the window fills), and change history only at flushes. false: flush on every
   * final reply, and purges, grace and thinking strip follow the turns as they pass.
   */
  cacheAware: boolean;
  /**
   * Mid-task, a cache-aware flush asks for its summaries in the background: the agent's next request
   * does not wait, and the summaries land a request later (that request still carries the outputs
   * raw). A final reply's flush is always asked in the background.
   */
  backgroundSummaries: boolean;
  chainCompression: ChainCompressionConfig;
  purgeErrors: PurgeErrorsConfig;
  userShell: UserShellConfig;
  thinkingStrip: ThinkingStripConfig;
  selfControl: SelfControlConfig;
}

type NestedKey = "chainCompression" | "purgeErrors" | "userShell" | "thinkingStrip" | "selfControl";
type LeafKey = Exclude<keyof PruneConfig, NestedKey>;

/** What one settings file contributes: only the keys it sets validly. */
export type PruneConfigLayer = Partial<Pick<PruneConfig, LeafKey>> & {
  [N in NestedKey]?: Partial<PruneConfig[N]>;
};

export interface ConfigWarning {
  /** Dotted settings key, e.g. "contextPrune.minBatchChars", or the file path for file-level problems. */
  key: string;
  /** Complete human-readable text, starting with the key. */
  message: string;
  source?: "global" | "project" | (string & {});
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

export const DEFAULT_CONFIG: PruneConfig = deepFreeze({
  enabled: true,
  pruneOn: "agent-message",
  summarizerModel: "default",
  summarizerThinking: "default",
  summarizerIdleTimeoutMs: 60_000,
  summarizerTimeoutMs: 300_000,
  protectedTools: [],
  protectedPaths: ["**/skills/**/*.md"],
  protectedResendShare: 0.1,
  spillThreshold: 65_536,
  spillPreviewBytes: 1024,
  minBatchChars: 1000,
  summarizerInputChars: 2000,
  dedupByContentHash: true,
  quietOversizedSkips: false,
  autoBudgetThreshold: null,
  budgetTurnDelta: null,
  recoveryGraceTurns: 3,
  cacheAware: true,
  backgroundSummaries: false,
  chainCompression: { enabled: true, rollingWindow: 3, fuseRangeSummary: true, stripFinalAssistantThinking: true },
  purgeErrors: { enabled: true, cooldownTurns: 2, minArgChars: 500 },
  userShell: { enabled: true, minChars: 2000, afterPrompts: 3 },
  thinkingStrip: { enabled: false, keepLastTurns: 16 },
  selfControl: {
    enabled: true,
    maxActiveRewinds: 5,
    maxRewindsPerPrompt: 5,
    refuseRewindAtFraction: 0.9,
    mutationWarning: true,
    maxActiveShrinks: 32,
    shrinkStaleAfterRenders: 3,
    notifyMaxChars: 2048,
    bloatReminder: true,
    bloatThresholdBytes: 16_384,
    bloatThresholdBytesByTool: { read: 24_576 },
    driftNudge: true,
    driftThresholdTokens: 4000,
    driftWindowTurns: 3,
    highWaterFraction: 0.7,
    checkpointLine: true,
  },
});

// ---------------------------------------------------------------------------------------------
// Field rules

type RuleResult<T> =
  | { ok: true; value: T; adjustment?: string; droppedItems?: string[]; /** the value is not used: the inherited one applies */ fallBack?: boolean }
  | { ok: false; expected: string };

type FieldRule<T> = (raw: unknown) => RuleResult<T>;

type FieldRules<T> = { [K in keyof T]-?: FieldRule<T[K]> };

const accept = <T>(value: T): RuleResult<T> => ({ ok: true, value });
const reject = (expected: string): { ok: false; expected: string } => ({ ok: false, expected });

const isFiniteNumber = (raw: unknown): raw is number => typeof raw === "number" && Number.isFinite(raw);

const booleanRule: FieldRule<boolean> = (raw) => (typeof raw === "boolean" ? accept(raw) : reject("true or false"));

function oneOfRule<T extends string>(choices: readonly T[]): FieldRule<T> {
  const expected = `one of ${choices.map((c) => JSON.stringify(c)).join(", ")}`;
  return (raw) => (choices.some((choice) => choice === raw) ? accept(raw as T) : reject(expected));
}

const nonNegativeNumber: FieldRule<number> = (raw) =>
  isFiniteNumber(raw) && raw >= 0 ? accept(raw) : reject("a non-negative number");

const positiveNumber: FieldRule<number> = (raw) =>
  isFiniteNumber(raw) && raw > 0 ? accept(raw) : reject("a positive number");

const nonNegativeInteger: FieldRule<number> = (raw) =>
  Number.isSafeInteger(raw) && (raw as number) >= 0 ? accept(raw as number) : reject("a non-negative integer");

function integerAtLeast(minimum: number): FieldRule<number> {
  return (raw) => {
    if (!Number.isSafeInteger(raw)) return reject(`an integer (at least ${minimum})`);
    const value = raw as number;
    if (value >= minimum) return accept(value);
    return { ok: true, value: minimum, adjustment: `raised to the minimum ${minimum}` };
  };
}

const fractionOrNull: FieldRule<number | null> = (raw) =>
  raw === null || (isFiniteNumber(raw) && raw > 0 && raw <= 1) ? accept(raw) : reject("null or a fraction in (0, 1]");

const modelReference: FieldRule<string> = (raw) => {
  const expected = `"default" or "provider/model-id"`;
  if (typeof raw !== "string") return reject(expected);
  if (raw === "default") return accept(raw);
  const slash = raw.indexOf("/");
  return slash > 0 && slash < raw.length - 1 && raw.trim() === raw ? accept(raw) : reject(expected);
};

const stringArray: FieldRule<string[]> = (raw) => {
  if (!Array.isArray(raw)) return reject("an array of strings");
  const badIndex = raw.findIndex((item) => typeof item !== "string");
  if (badIndex >= 0) return reject(`an array of strings (item ${badIndex} is ${describeValue(raw[badIndex])})`);
  return accept(raw.slice() as string[]);
};

/** Patterns in one list whose refusal is told one by one; the rest are told in one warning. */
const MAX_REFUSED_PATTERNS_TOLD = 10;
function describePattern(pattern: string): string {
  return JSON.stringify(pattern.length > 160 ? `${pattern.slice(0, 157)}...` : pattern);
}

/**
 * A list of glob patterns within protection's bounds (GLOB_BOUNDS, for each pattern and for the
 * list): a pattern past them is dropped with a warning naming it, and the other patterns stay.
 */
const globList: FieldRule<string[]> = (raw) => {
  const strings = stringArray(raw);
  if (!strings.ok) return strings;
  const kept: string[] = [];
  const refused = new Map<string, string>();
  let rows = 0;
  for (const pattern of strings.value) {
    if (refused.has(pattern)) continue;
    const { expansions, problem } = checkGlobPattern(pattern);
    if (problem !== undefined) {
      refused.set(pattern, problem);
    } else if (rows + expansions > GLOB_BOUNDS.listExpansions) {
      refused.set(pattern, `with it the list's patterns would expand to more than ${formatNumber(GLOB_BOUNDS.listExpansions)} in all`);
    } else {
      rows += expansions;
      kept.push(pattern);
    }
  }
  if (refused.size === 0) return strings;
  const told = [...refused].slice(0, MAX_REFUSED_PATTERNS_TOLD).map(([pattern, problem]) => `${describePattern(pattern)} ignored: ${problem}`);
  const untold = refused.size - told.length;
  if (untold > 0) {
    told.push(`${untold} more ${untold === 1 ? "pattern" : "patterns"} ignored as well (too long, too many brace expansions or extglobs, or past the list's total)`);
  }
  // Every pattern refused: an empty list would turn path protection off, which the person who
  // wrote patterns did not ask for. The inherited list (global, else the default) applies instead.
  if (kept.length === 0) {
    told.push("no pattern is left, so the inherited list applies");
    return { ok: true, value: kept, droppedItems: told, fallBack: true };
  }
  return { ok: true, value: kept, droppedItems: told };
};

const fraction: FieldRule<number> = (raw) =>
  isFiniteNumber(raw) && raw > 0 && raw <= 1 ? accept(raw) : reject("a fraction in (0, 1]");

const byteThresholds: FieldRule<Record<string, number>> = (raw) => {
  const expected = "an object of tool name to a positive number of bytes";
  if (!isRecord(raw)) return reject(expected);
  const out: Record<string, number> = {};
  for (const [tool, value] of Object.entries(raw)) {
    if (!isFiniteNumber(value) || value <= 0) return reject(`${expected} (${JSON.stringify(tool)} is ${describeValue(value)})`);
    out[tool] = value;
  }
  return accept(out);
};

const LEAF_RULES: FieldRules<Pick<PruneConfig, LeafKey>> = {
  enabled: booleanRule,
  pruneOn: oneOfRule(PRUNE_ON_MODES),
  summarizerModel: modelReference,
  summarizerThinking: oneOfRule(THINKING_LEVELS),
  summarizerIdleTimeoutMs: positiveNumber,
  summarizerTimeoutMs: positiveNumber,
  protectedTools: stringArray,
  protectedPaths: globList,
  protectedResendShare: fraction,
  spillThreshold: positiveNumber,
  spillPreviewBytes: nonNegativeInteger,
  minBatchChars: nonNegativeNumber,
  summarizerInputChars: integerAtLeast(500),
  dedupByContentHash: booleanRule,
  quietOversizedSkips: booleanRule,
  autoBudgetThreshold: fractionOrNull,
  budgetTurnDelta: fractionOrNull,
  recoveryGraceTurns: nonNegativeInteger,
  cacheAware: booleanRule,
  backgroundSummaries: booleanRule,
};

const NESTED_RULES: { [N in NestedKey]: FieldRules<PruneConfig[N]> } = {
  chainCompression: {
    enabled: booleanRule,
    rollingWindow: nonNegativeInteger,
    fuseRangeSummary: booleanRule,
    stripFinalAssistantThinking: booleanRule,
  },
  purgeErrors: {
    enabled: booleanRule,
    cooldownTurns: nonNegativeInteger,
    minArgChars: nonNegativeNumber,
  },
  userShell: {
    enabled: booleanRule,
    minChars: nonNegativeInteger,
    afterPrompts: nonNegativeInteger,
  },
  thinkingStrip: {
    enabled: booleanRule,
    keepLastTurns: integerAtLeast(1),
  },
  selfControl: {
    enabled: booleanRule,
    maxActiveRewinds: integerAtLeast(1),
    maxRewindsPerPrompt: integerAtLeast(1),
    refuseRewindAtFraction: fraction,
    mutationWarning: booleanRule,
    maxActiveShrinks: integerAtLeast(1),
    shrinkStaleAfterRenders: integerAtLeast(1),
    notifyMaxChars: nonNegativeInteger,
    bloatReminder: booleanRule,
    bloatThresholdBytes: positiveNumber,
    bloatThresholdBytesByTool: byteThresholds,
    driftNudge: booleanRule,
    driftThresholdTokens: nonNegativeNumber,
    driftWindowTurns: integerAtLeast(1),
    highWaterFraction: fractionOrNull,
    checkpointLine: booleanRule,
  },
};

const NESTED_KEYS = Object.keys(NESTED_RULES) as NestedKey[];

// ---------------------------------------------------------------------------------------------
// Validation

/** A short rendering of a settings value for warning messages. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return value.length === 0 ? "an empty array" : "an array";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
    case "number":
    case "boolean":
    case "bigint":
      return String(value);
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}

function validateFields<T extends object>(
  block: Record<string, unknown>,
  rules: FieldRules<T>,
  keyPrefix: string,
  source: string | undefined,
  warnings: ConfigWarning[],
): Partial<T> {
  const valid: Partial<T> = {};
  for (const field of Object.keys(rules) as Array<keyof T & string>) {
    if (!Object.hasOwn(block, field)) continue;
    const raw = block[field];
    if (raw === undefined) continue;
    const key = `${keyPrefix}.${field}`;
    const result = rules[field](raw);
    if (!result.ok) {
      warnings.push(makeWarning(key, `expected ${result.expected}, got ${describeValue(raw)}`, source));
      continue;
    }
    if (result.adjustment) warnings.push(makeWarning(key, `${describeValue(raw)} ${result.adjustment}`, source));
    for (const dropped of result.droppedItems ?? []) warnings.push(makeWarning(key, dropped, source));
    if (result.fallBack) continue;
    valid[field] = result.value;
  }
  return valid;
}

function makeWarning(key: string, problem: string, source: string | undefined): ConfigWarning {
  const warning: ConfigWarning = { key, message: `${key}: ${problem}` };
  if (source !== undefined) warning.source = source;
  return warning;
}

/**
 * The list a `contextPrune` block sets itself under `key`, when it is a list of strings; undefined
 * when it sets none, or something else (then the inherited list applies, and an edit starts from it).
 * Not validated as patterns: this is the list as written, for an edit to change.
 */
export function ownList(block: unknown, key: "protectedPaths" | "protectedTools"): string[] | undefined {
  if (!isRecord(block) || !Object.hasOwn(block, key)) return undefined;
  const value = block[key];
  return Array.isArray(value) && value.every((item): item is string => typeof item === "string") ? value : undefined;
}

/**
 * Validates one `contextPrune` block. Returns only the keys it sets validly; every invalid key
 * yields exactly one warning. Unknown keys are ignored. Never throws.
 */
export function validateConfig(block: unknown, source?: string): { config: PruneConfigLayer; warnings: ConfigWarning[] } {
  const warnings: ConfigWarning[] = [];
  if (block === undefined || block === null) return { config: {}, warnings };
  if (!isRecord(block)) {
    warnings.push(makeWarning(SETTINGS_KEY, `expected an object, got ${describeValue(block)}; using defaults`, source));
    return { config: {}, warnings };
  }
  const layer: PruneConfigLayer = validateFields(block, LEAF_RULES, SETTINGS_KEY, source, warnings);
  for (const nestedKey of NESTED_KEYS) {
    if (!Object.hasOwn(block, nestedKey)) continue;
    const nestedBlock = block[nestedKey];
    if (nestedBlock === undefined) continue;
    const key = `${SETTINGS_KEY}.${nestedKey}`;
    if (!isRecord(nestedBlock)) {
      warnings.push(makeWarning(key, `expected an object, got ${describeValue(nestedBlock)}`, source));
      continue;
    }
    assignNested(layer, nestedKey, nestedBlock, key, source, warnings);
  }
  return { config: layer, warnings };
}

function assignNested<N extends NestedKey>(
  layer: PruneConfigLayer,
  nestedKey: N,
  nestedBlock: Record<string, unknown>,
  key: string,
  source: string | undefined,
  warnings: ConfigWarning[],
): void {
  const rules: FieldRules<PruneConfig[N]> = NESTED_RULES[nestedKey];
  const valid = validateFields(nestedBlock, rules, key, source, warnings);
  if (Object.keys(valid).length > 0) (layer as { [K in N]?: Partial<PruneConfig[N]> })[nestedKey] = valid;
}

/** Applies layers over a base key by key, nested blocks merged field by field. Returns fresh objects. */
export function mergeConfigLayers(base: PruneConfig, ...layers: PruneConfigLayer[]): PruneConfig {
  const merged: PruneConfig = {
    ...base,
    protectedTools: base.protectedTools.slice(),
    protectedPaths: base.protectedPaths.slice(),
    chainCompression: { ...base.chainCompression },
    purgeErrors: { ...base.purgeErrors },
    userShell: { ...base.userShell },
    thinkingStrip: { ...base.thinkingStrip },
    selfControl: { ...base.selfControl, bloatThresholdBytesByTool: { ...base.selfControl.bloatThresholdBytesByTool } },
  };
  for (const layer of layers) {
    const { chainCompression, purgeErrors, userShell, thinkingStrip, selfControl, protectedTools, protectedPaths, ...leaves } = layer;
    Object.assign(merged, leaves);
    if (protectedTools) merged.protectedTools = protectedTools.slice();
    if (protectedPaths) merged.protectedPaths = protectedPaths.slice();
    if (chainCompression) Object.assign(merged.chainCompression, chainCompression);
    if (purgeErrors) Object.assign(merged.purgeErrors, purgeErrors);
    if (userShell) Object.assign(merged.userShell, userShell);
    if (thinkingStrip) Object.assign(merged.thinkingStrip, thinkingStrip);
    if (selfControl) Object.assign(merged.selfControl, selfControl);
  }
  return merged;
}

/**
 * Project overrides global key by key, nested blocks deeply. An invalid value falls back to the
 * global value when that is valid, else to the default. An explicit `protectedPaths: []` wins.
 */
export function resolveConfig(globalBlock: unknown, projectBlock: unknown): { config: PruneConfig; warnings: ConfigWarning[] } {
  const globalLayer = validateConfig(globalBlock, "global");
  const projectLayer = validateConfig(projectBlock, "project");
  return {
    config: mergeConfigLayers(DEFAULT_CONFIG, globalLayer.config, projectLayer.config),
    warnings: [...globalLayer.warnings, ...projectLayer.warnings],
  };
}
