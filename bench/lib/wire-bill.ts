// What a provider bills for the request bodies a real `pi` sent, priced as they are on the wire:
// no model of Pi's conversion, only the JSON the scripted server logged. It is the yardstick the
// emulated meters (core/src/cost/cache-rules.ts) are checked against, so it takes nothing from
// them or from the pruner: its rules are the providers' documented ones, stated here.
//
// - Anthropic Messages: the prompt is the tool definitions, the system blocks, then every
//   message's content blocks, in that order. The breakpoints are exactly where the body carries
//   `cache_control`. Each breakpoint whose prefix holds at least the model's minimum cacheable
//   tokens leaves a cache entry; a breakpoint reads the longest earlier entry that ends at a block
//   boundary at most `lookbackBlocks` blocks back (the breakpoint's own block counts among them);
//   everything after the read up to the last entry-making breakpoint is written, the rest is
//   uncached. Thinking blocks of earlier turns are in the body, so they are prompt: current models
//   (Sonnet 4.6, Opus 4.5 and later) keep them in the cached prompt and bill them.
//   https://docs.claude.com/en/docs/build-with-claude/prompt-caching
// - OpenAI chat completions: automatic prefix caching. The longest prefix (the tool declarations,
//   then whole messages, then the characters of the first message that differs) shared with any
//   earlier request is read, counted from 1,024 tokens in steps of 128; the rest is billed at the
//   input price, and writing costs nothing.
//   https://developers.openai.com/api/docs/guides/prompt-caching
//
// Tokens are core's estimate (characters / 4) of each block's JSON without its `cache_control`.
// Each meter bills one conversation: the agent's requests, or a summarizer's (a conversation of
// its own, with its own cache entries).
import { createHash } from "node:crypto";
import { estimateTokens } from "../../core/src/shapes/size.ts";

/** The wire formats the meters read. */
export type WireApi = "anthropic-messages" | "openai-completions";

/** A model's prices in dollars per million tokens, as Pi's model registry carries them (`cost`). */
export interface ModelPrices {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** One request's input as billed. */
interface WireTokens {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  uncached: number;
}

/** Anthropic's cache limits for one model. */
export interface AnthropicCacheLimits {
  /** The smallest prefix (tokens) a breakpoint caches. */
  minCacheTokens: number;
  /** How many blocks back from a breakpoint, the breakpoint included, an earlier entry is found. */
  lookbackBlocks: number;
}

/** Claude Sonnet 4.6: a 1,024-token minimum, the 20-block lookback. */
export const SONNET_CACHE_LIMITS: AnthropicCacheLimits = { minCacheTokens: 1024, lookbackBlocks: 20 };

const OPENAI_MIN_TOKENS = 1024;
const OPENAI_STEP_TOKENS = 128;

/** Bills one conversation's request bodies in order, remembering what they left in the cache. */
export interface WireMeter {
  bill(body: unknown): WireTokens;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** A block without its `cache_control`, which marks a breakpoint but is no part of the prompt. */
function withoutCacheControl(block: unknown): unknown {
  if (!isObject(block) || !("cache_control" in block)) return block;
  const { cache_control: _marker, ...rest } = block;
  return rest;
}

const hasBreakpoint = (block: unknown) => isObject(block) && block.cache_control !== undefined && block.cache_control !== null;

/** The key of a prefix: the key of the prefix before it and the text that extends it. */
function extend(key: string, text: string): string {
  return createHash("sha1").update(key).update("\u0000").update(text).digest("hex");
}

/** One Anthropic prompt block: its text as keyed (with its section or role), its tokens, whether it is a breakpoint. */
interface PromptBlock {
  key: string;
  tokens: number;
  breakpoint: boolean;
}

/** The blocks of an Anthropic Messages body in prompt order: tools, system, messages. */
function anthropicBlocks(body: unknown): PromptBlock[] {
  const out: PromptBlock[] = [];
  if (!isObject(body)) return out;
  const push = (section: string, block: unknown) => {
    const text = JSON.stringify(withoutCacheControl(block));
    out.push({ key: `${section}${text}`, tokens: estimateTokens(text.length), breakpoint: hasBreakpoint(block) });
  };
  for (const tool of Array.isArray(body.tools) ? body.tools : []) push("tool:", tool);
  if (typeof body.system === "string") push("system:", { type: "text", text: body.system });
  else if (Array.isArray(body.system)) for (const block of body.system) push("system:", block);
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObject(message)) continue;
    const content = typeof message.content === "string" ? [{ type: "text", text: message.content }] : Array.isArray(message.content) ? message.content : [];
    // The first block of a message carries its role: the same blocks split into other messages are another prompt.
    content.forEach((block, i) => push(i === 0 ? `${String(message.role)}:` : "", block));
  }
  return out;
}

export function anthropicWireMeter(limits: AnthropicCacheLimits = SONNET_CACHE_LIMITS): WireMeter {
  const entries = new Set<string>();
  return {
    bill(body) {
      const blocks = anthropicBlocks(body);
      const keys: string[] = [];
      const ends: number[] = [];
      let key = "";
      let total = 0;
      for (const block of blocks) {
        key = extend(key, block.key);
        total += block.tokens;
        keys.push(key);
        ends.push(total);
      }
      const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
      let read = 0;
      for (const bp of breakpoints) {
        for (let j = bp; j >= 0 && j > bp - limits.lookbackBlocks; j--) {
          if (entries.has(keys[j]!)) {
            read = Math.max(read, ends[j]!);
            break;
          }
        }
      }
      let cachedEnd = 0;
      for (const bp of breakpoints) {
        if (ends[bp]! < limits.minCacheTokens) continue;
        entries.add(keys[bp]!);
        cachedEnd = Math.max(cachedEnd, ends[bp]!);
      }
      const cacheWrite = Math.max(0, cachedEnd - read);
      return { input: total, cacheRead: read, cacheWrite, uncached: total - read - cacheWrite };
    },
  };
}

/** The parts of an OpenAI chat-completions prompt in order: the tool declarations, then each message. */
function openAiParts(body: unknown): string[] {
  if (!isObject(body)) return [];
  const parts: string[] = [];
  if (Array.isArray(body.tools) && body.tools.length) parts.push(JSON.stringify(body.tools));
  for (const message of Array.isArray(body.messages) ? body.messages : []) parts.push(JSON.stringify(message));
  return parts;
}

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** What automatic caching reads of a shared prefix: nothing under 1,024 tokens, else whole 128-token steps. */
function openAiCachedTokens(shared: number): number {
  return shared < OPENAI_MIN_TOKENS ? 0 : OPENAI_MIN_TOKENS + Math.floor((shared - OPENAI_MIN_TOKENS) / OPENAI_STEP_TOKENS) * OPENAI_STEP_TOKENS;
}

export function openAiWireMeter(): WireMeter {
  // For each prefix of whole parts seen, the parts that followed it in earlier requests.
  const following = new Map<string, Set<string>>();
  return {
    bill(body) {
      const parts = openAiParts(body);
      let key = "";
      let total = 0;
      let shared = 0;
      let matching = true;
      for (const part of parts) {
        const tokens = estimateTokens(part.length);
        const seen = following.get(key);
        if (matching) {
          if (seen?.has(part)) shared += tokens;
          else {
            // The first part that differs: the characters it shares with what followed the same prefix before.
            let chars = 0;
            for (const earlier of seen ?? []) chars = Math.max(chars, commonPrefixLength(part, earlier));
            shared += Math.floor(chars / 4);
            matching = false;
          }
        }
        if (seen) seen.add(part);
        else following.set(key, new Set([part]));
        key = extend(key, part);
        total += tokens;
      }
      const cacheRead = Math.min(total, openAiCachedTokens(shared));
      return { input: total, cacheRead, cacheWrite: 0, uncached: total - cacheRead };
    },
  };
}

function wireMeter(api: WireApi, limits?: AnthropicCacheLimits): WireMeter {
  return api === "anthropic-messages" ? anthropicWireMeter(limits) : openAiWireMeter();
}

/** One logged request: its body, the tokens of the answer it got, and whose request it was. */
export interface WireRequest {
  body: unknown;
  outputTokens: number;
  summarizer: boolean;
}

/** A run's bill: the agent's and the summarizer's requests, each conversation metered on its own. */
export interface WireBill {
  agentRequests: number;
  summarizerCalls: number;
  /** Input of every request (agent and summarizer), by how it was billed. */
  tokens: WireTokens;
  outputTokens: number;
  /** The summarizer's share of the above. */
  summarizer: WireTokens & { outputTokens: number; dollars: number };
  /** The largest agent request's input tokens. */
  peakContext: number;
  /** Everything, input and output, at the model's prices. */
  dollars: number;
  /** Input only (agent and summarizer) and the summarizer's output: what the emulated meters price. */
  dollarsWithoutAgentOutput: number;
}

function dollarsOf(tokens: WireTokens, outputTokens: number, prices: ModelPrices): number {
  return (tokens.uncached * prices.input + tokens.cacheRead * prices.cacheRead + tokens.cacheWrite * prices.cacheWrite + outputTokens * prices.output) / 1e6;
}

const zero = (): WireTokens => ({ input: 0, cacheRead: 0, cacheWrite: 0, uncached: 0 });

function add(into: WireTokens, t: WireTokens): void {
  into.input += t.input;
  into.cacheRead += t.cacheRead;
  into.cacheWrite += t.cacheWrite;
  into.uncached += t.uncached;
}

/** Bills a run's logged requests, in the order they arrived, at `prices`. */
export function billWire(api: WireApi, requests: readonly WireRequest[], prices: ModelPrices, limits?: AnthropicCacheLimits): WireBill {
  const agentMeter = wireMeter(api, limits);
  const summarizerMeter = wireMeter(api, limits);
  const agent = zero();
  const summarizer = zero();
  let agentOutput = 0;
  let summarizerOutput = 0;
  let peakContext = 0;
  let agentRequests = 0;
  let summarizerCalls = 0;
  for (const request of requests) {
    if (request.summarizer) {
      add(summarizer, summarizerMeter.bill(request.body));
      summarizerOutput += request.outputTokens;
      summarizerCalls++;
    } else {
      const t = agentMeter.bill(request.body);
      add(agent, t);
      agentOutput += request.outputTokens;
      peakContext = Math.max(peakContext, t.input);
      agentRequests++;
    }
  }
  const tokens = zero();
  add(tokens, agent);
  add(tokens, summarizer);
  const summarizerDollars = dollarsOf(summarizer, summarizerOutput, prices);
  return {
    agentRequests,
    summarizerCalls,
    tokens,
    outputTokens: agentOutput + summarizerOutput,
    summarizer: { ...summarizer, outputTokens: summarizerOutput, dollars: summarizerDollars },
    peakContext,
    dollars: dollarsOf(tokens, agentOutput + summarizerOutput, prices),
    dollarsWithoutAgentOutput: dollarsOf(agent, 0, prices) + summarizerDollars,
  };
}
