// The price rules of the active model: how its provider caches a request (Anthropic-style
// breakpoints, automatic prefix caching, or not at all) and what each kind of token costs, as
// multiples of the model's base input price. They follow what Pi actually sends: the caching is
// the one Pi's provider code applies for that model, the prices are the model's registry entry
// (Pi's `ctx.model.cost`, dollars per million tokens). Core may not import Pi, so the few entries
// the bench and the editor's timeline need without a model object are copied below.
//
// Thinking of earlier turns: Anthropic keeps it in the prompt (cached and billed as input) on
// Opus 4.5 and later, Sonnet 4.6 and later and the newer families; older models and Haiku up to
// 4.5 strip it. https://platform.claude.com/docs/en/build-with-claude/extended-thinking
// (differences in thinking across model versions), and the prompt-caching page beside it.
import { isRecord } from "../shapes/json.ts";

/**
 * How a provider caches a request: Anthropic-style breakpoints, automatic prefix caching, not at
 * all; "simple" is the bench's earlier model, kept for its tables. Each also names a price model.
 */
export type CacheRules = "anthropic" | "openai" | "none" | "simple";

export interface PriceRules {
  /** The model the prices are from ("provider/id"), or the stand-in's when the model is unknown. */
  model: string;
  /** Dollars per million input tokens: what the multiples multiply. */
  inputPerMillion: number;
  caching: CacheRules;
  /** Multiples of the base input price: a cache read, a cache write, an uncached token, an output token. */
  read: number;
  write: number;
  uncached: number;
  output: number;
  /** Thinking of earlier turns is kept in the prompt: input, and part of the cached prefix. */
  thinkingKept: boolean;
  /** Prompts shorter than this are not cached. */
  minCachedTokens: number;
}

/** The price models the bench's cost tables list, in their order. */
export const CACHE_RULES = ["anthropic", "openai", "simple"] as const;
export type PriceModelName = (typeof CACHE_RULES)[number];

/** A model's rules, or a named price model standing for them. */
export type Pricing = PriceRules | CacheRules;

/** How many blocks before a breakpoint Anthropic looks for an earlier cache entry (the breakpoint's own block counted). */
export const ANTHROPIC_LOOKBACK_BLOCKS = 20;

/** The minimum cacheable prompt where a model does not say otherwise (Anthropic's smallest, OpenAI's). */
const MIN_CACHED_TOKENS = 1024;

/** What priceRulesFor reads of Pi's `Model` (and what the timeline knows of an answer: api, provider, id). */
export interface ModelInfo {
  api?: string;
  provider?: string;
  id?: string;
  name?: string;
  cost?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
  /** Pi's compat block; only `cacheControlFormat` of the OpenAI-completions one is read. */
  compat?: unknown;
}

type Cost = Required<NonNullable<ModelInfo["cost"]>>;

/** Registry prices (Pi 1.6's pi-ai providers/data) of the models named without a cost: the bench's stand-ins and a few the timeline meets. */
const KNOWN_COSTS: Readonly<Record<string, Cost>> = {
  "claude-sonnet-4-6": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-opus-4-6": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-haiku-4-5": { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  "claude-fable-5-1": { input: 10, output: 50, cacheRead: 0.25, cacheWrite: 12.5 },
  "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 },
};

/** The model the Anthropic price model emulates, and the one an unknown model is priced as. */
const ANTHROPIC_STAND_IN = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-6" } as const;
/** The model the OpenAI price model emulates (automatic prefix caching, no write premium). */
const OPENAI_STAND_IN = { api: "openai-responses", provider: "openai", id: "gpt-5" } as const;

/** The OpenAI APIs, which cache prefixes automatically unless Pi adds Anthropic-style breakpoints. */
const OPENAI_API = /^(azure-)?openai-/;

/**
 * How Pi's provider caches requests for `model`. Pi's Anthropic provider puts `cache_control`
 * breakpoints on every request; its OpenAI-completions provider does too when the model's compat
 * says `cacheControlFormat: "anthropic"`, which it detects itself for OpenRouter's `anthropic/*`
 * routes (an explicit compat value wins); its Bedrock provider adds cache points for Claude. The
 * other OpenAI APIs cache automatically. Anything else is priced as breakpoints, the strictest.
 */
function cachingOf(model: ModelInfo): "anthropic" | "openai" {
  const api = model.api ?? "";
  if (api === "openai-completions") return marksCompletions(model) ? "anthropic" : "openai";
  return OPENAI_API.test(api) ? "openai" : "anthropic";
}

/**
 * Whether Pi's OpenAI-completions provider puts Anthropic-style `cache_control` markers on this
 * model's requests: its compat says `cacheControlFormat: "anthropic"`, or, without a compat value,
 * it is one of OpenRouter's `anthropic/*` routes (Pi's `getCompatCacheControl`).
 */
export function marksCompletions(model: ModelInfo): boolean {
  const detected = model.provider === "openrouter" && (model.id ?? "").startsWith("anthropic/") ? "anthropic" : undefined;
  const own = isRecord(model.compat) ? model.compat.cacheControlFormat : undefined;
  return (own ?? detected) === "anthropic";
}

/** A Claude model's family and version from its id ("claude-sonnet-4-6", "anthropic/claude-opus-4.5", "claude-3-7-sonnet-…"). */
function claudeVersion(id: string): { family: string; major: number; minor: number } | undefined {
  const lower = id.toLowerCase();
  // The Claude 3 generation puts the version before the family.
  const legacy = /claude-(\d)(?:[-.](\d))?-(opus|sonnet|haiku)/.exec(lower);
  if (legacy) return { family: legacy[3]!, major: Number(legacy[1]), minor: Number(legacy[2] ?? 0) };
  const modern = /(opus|sonnet|haiku|fable|mythos)[-.](\d+)(?:[-.](\d)(?!\d))?/.exec(lower);
  return modern ? { family: modern[1]!, major: Number(modern[2]), minor: Number(modern[3] ?? 0) } : undefined;
}

const atLeast = (v: { major: number; minor: number }, major: number, minor: number) => v.major > major || (v.major === major && v.minor >= minor);

/** Whether Anthropic keeps earlier turns' thinking for this model: an unknown model is assumed to (the strictest: it is billed). */
function keepsThinking(id: string): boolean {
  const v = claudeVersion(id);
  if (!v) return true;
  switch (v.family) {
    case "opus":
      return atLeast(v, 4, 5);
    case "sonnet":
      return atLeast(v, 4, 6);
    case "haiku":
      return atLeast(v, 5, 0);
    default:
      return true;
  }
}

/** Anthropic's minimum cacheable prompt per model, where its docs state one. */
function anthropicMinimum(id: string): number {
  const v = claudeVersion(id);
  if (!v) return MIN_CACHED_TOKENS;
  if (v.family === "opus" && v.major === 4 && v.minor >= 5) return 4096;
  if (v.family === "haiku" && v.major === 4) return 4096;
  if (v.family === "haiku" && v.major === 3) return 2048;
  return MIN_CACHED_TOKENS;
}

/** A price over the input price, without the float's last digit ($0.3 / $3 is 0.1, not 0.09999999999999999). */
const ratio = (price: number, input: number) => Math.round((price / input) * 1e9) / 1e9;

/** The registry cost of `model`: its own, else a known entry for its id; undefined when unknown (absent, or no input price). */
function costOf(model: ModelInfo): Cost | undefined {
  const own = model.cost;
  if (own && typeof own.input === "number" && own.input > 0) {
    return { input: own.input, output: own.output ?? 0, cacheRead: own.cacheRead ?? 0, cacheWrite: own.cacheWrite ?? 0 };
  }
  const id = model.id ?? "";
  return KNOWN_COSTS[id] ?? KNOWN_COSTS[id.replace(/^[^/]*\//, "")] ?? KNOWN_COSTS[id.replace(/-\d{8}$/, "")];
}

/**
 * The price rules for Pi's model. The caching is the one Pi applies for it; the multiples are its
 * registry prices over its input price; a model with no cache prices caches nothing. An unknown
 * model (no cost, or an all-zero one) is priced as the stand-in of its caching: claude-sonnet-4-6
 * for breakpoints (the strictest), gpt-5 for automatic caching. No model at all: the Anthropic one.
 */
export function priceRulesFor(model: ModelInfo | undefined): PriceRules {
  if (!model) return ANTHROPIC_RULES;
  const caching = cachingOf(model);
  const cost = costOf(model);
  if (!cost) return caching === "openai" ? OPENAI_RULES : ANTHROPIC_RULES;
  const name = `${model.provider ?? "?"}/${model.id ?? "?"}`;
  const output = cost.output > 0 ? ratio(cost.output, cost.input) : caching === "openai" ? OPENAI_RULES.output : ANTHROPIC_RULES.output;
  if (cost.cacheRead <= 0 && cost.cacheWrite <= 0) {
    return { model: name, inputPerMillion: cost.input, caching: "none", read: 1, write: 1, uncached: 1, output, thinkingKept: false, minCachedTokens: MIN_CACHED_TOKENS };
  }
  const read = ratio(cost.cacheRead, cost.input);
  // Without a write price a write costs what any input does; Anthropic-style caching without one
  // is not documented anywhere, so it keeps Anthropic's premium.
  const write = cost.cacheWrite > 0 ? ratio(cost.cacheWrite, cost.input) : caching === "anthropic" ? ANTHROPIC_RULES.write : 1;
  const id = model.id ?? "";
  const claude = caching === "anthropic";
  return { model: name, inputPerMillion: cost.input, caching, read, write, uncached: 1, output, thinkingKept: claude && keepsThinking(id), minCachedTokens: claude ? anthropicMinimum(id) : MIN_CACHED_TOKENS };
}

const ANTHROPIC_RULES: PriceRules = { model: "anthropic/claude-sonnet-4-6", inputPerMillion: 3, caching: "anthropic", read: 0.1, write: 1.25, uncached: 1, output: 5, thinkingKept: true, minCachedTokens: MIN_CACHED_TOKENS };
const OPENAI_RULES: PriceRules = { model: "openai/gpt-5", inputPerMillion: 1.25, caching: "openai", read: 0.1, write: 1, uncached: 1, output: 8, thinkingKept: false, minCachedTokens: MIN_CACHED_TOKENS };

/**
 * The named price models: Anthropic's emulates claude-sonnet-4-6 and OpenAI's gpt-5, from the
 * registry; the simple model prices an Anthropic-style cache by a character prefix; "none" bills
 * everything uncached, with Anthropic's stand-in output price.
 */
export const PRICE_MODELS: Readonly<Record<CacheRules, PriceRules>> = {
  anthropic: priceRulesFor({ ...ANTHROPIC_STAND_IN, cost: KNOWN_COSTS["claude-sonnet-4-6"] }),
  openai: priceRulesFor({ ...OPENAI_STAND_IN, cost: KNOWN_COSTS["gpt-5"] }),
  none: { ...ANTHROPIC_RULES, model: "none", caching: "none", read: 1, write: 1, thinkingKept: false },
  simple: { ...ANTHROPIC_RULES, model: "simple", caching: "simple" },
};

/** The rules `pricing` stands for. */
export function pricesOf(pricing: Pricing): PriceRules {
  return typeof pricing === "string" ? PRICE_MODELS[pricing] : pricing;
}

/** Whether two rules are the same model's (a provider caches per model: another model starts with an empty cache). */
export function sameRules(a: PriceRules, b: PriceRules): boolean {
  return a.model === b.model && a.inputPerMillion === b.inputPerMillion && a.caching === b.caching && a.read === b.read && a.write === b.write && a.output === b.output && a.thinkingKept === b.thinkingKept && a.minCachedTokens === b.minCachedTokens;
}
