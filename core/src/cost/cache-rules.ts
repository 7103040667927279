// How a provider bills a conversation's requests once prompt caching is counted: which part of
// each request is read from the cache, written to it or sent uncached, each at its multiple of the
// model's base input price (price-rules.ts: the active model's registry prices). A `CacheMeter`
// per caching remembers what the earlier requests of one conversation left in the cache:
//
// - anthropic: Anthropic Messages with the breakpoints where Pi 1.6's provider puts them (the last
//   tool definition, the system block, the last content block of the last message when that
//   message is a user or tool-result message), and any the request adds (`extraBreakpoints`: the
//   pruner's own at its frontier). Each breakpoint whose prefix holds at least the model's minimum
//   leaves a cache entry (the prefix up to and including its block). A breakpoint reads the
//   longest earlier entry that is a prefix of the request and ends at a block boundary at most 20
//   blocks before it (the documented lookback); everything after the read up to the last
//   breakpoint is written, anything after that is uncached. Thinking of earlier turns is input and
//   part of the prefix on models that keep it; on older ones the API strips thinking of turns
//   before the latest user turn (not input, and it does not break the prefix) and the thinking of
//   the current tool-use loop is sent and counts. Entries live five minutes; the meter assumes
//   every request comes within that time of the one before (a warm cache).
//   https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
//   https://platform.claude.com/docs/en/build-with-claude/extended-thinking (thinking of earlier turns)
// - openai: automatic prefix caching: the longest prefix shared with any earlier request, counted
//   from 1,024 tokens in steps of 128, is read, the rest is billed uncached, or written where the
//   model has a write price (the GPT-5.6 family and later). Reasoning of earlier turns is dropped.
//   https://developers.openai.com/api/docs/guides/prompt-caching
// - none: a model without cache prices: everything is sent uncached.
// - simple: the bench's earlier model, kept for comparison with earlier figures: the common
//   character prefix with the previous request is read, the rest written.
//
// Tokens are core's estimate (characters / 4) of each block as the Anthropic Messages API carries
// it; the OpenAI model uses the same blocks, as its wire shape differs only in punctuation.
import type { AgentMessage, AssistantMessage, ImageContent, TextContent, ToolResultMessage } from "../shapes/messages.ts";
import { isFailedTurn, userShellText } from "../shapes/messages.ts";
import { CHARS_PER_TOKEN, estimateTokens } from "../shapes/size.ts";
import { messageFingerprint } from "../shapes/fingerprint.ts";
import { isRecord } from "../shapes/json.ts";
import { jsonText } from "../shapes/deep-json.ts";
import { ANTHROPIC_LOOKBACK_BLOCKS, pricesOf, type PriceRules, type Pricing } from "./price-rules.ts";

/** What the provider is sent: the system prompt, the tool declarations (JSON text), the messages (Pi's AgentMessage[] after our render). */
export interface ProviderRequest {
  system: string;
  tools: string;
  messages: readonly AgentMessage[];
  /** Messages (indexes) whose last block carries a breakpoint besides Pi's own (Anthropic-style caching only). */
  extraBreakpoints?: readonly number[];
}

export interface RequestBill {
  /** Everything sent (thinking of earlier turns excluded where the rules say it is not input). */
  inputTokens: number;
  /** Billed at the read price. */
  cacheReadTokens: number;
  /** Billed at the write price (0 where the provider charges no write premium). */
  cacheWriteTokens: number;
  /** Billed at the base input price. */
  uncachedTokens: number;
  /** Input-token equivalents at the model's base input price. */
  billed: number;
}

/** What the next request could read from the cache if history changed from one message on. */
export interface ReadAfterChange {
  /** Input tokens of `request` as these rules count them. */
  totalTokens: number;
  /** Of those, the prefix the next request still finds cached. */
  readTokens: number;
}

/** Bills one conversation's requests in order, remembering what is cached. */
export interface CacheMeter {
  bill(request: ProviderRequest): RequestBill;
  /**
   * For a request billed last, if the next one keeps its messages before `changedFrom` and
   * changes the rest, adding `nextBlocks` content blocks after it: what that next request reads.
   * It reads only what an earlier request cached (Anthropic: at a breakpoint, within the lookback
   * from the next request's last breakpoint), and only before the change. `cachedBefore`: a
   * breakpoint the caller places on both requests caches everything before that message
   * (Anthropic-style caching; ignored where the provider caches prefixes itself).
   */
  readAfterChange(request: ProviderRequest, changedFrom: number, nextBlocks: number, cachedBefore?: number): ReadAfterChange;
}

/**
 * A meter for one conversation under `pricing` (a model's rules or a named price model). It
 * converts each message to what the provider receives once, into `wires`: its own, or one its
 * owner shares between the meters that bill the same messages (the raw and the sent side of one
 * session, or one conversation under every price model).
 */
export function cacheMeter(pricing: Pricing, wires: WireCache = new WireCache()): CacheMeter {
  const rules = pricesOf(pricing);
  switch (rules.caching) {
    case "anthropic":
      return new AnthropicMeter(rules, wires);
    case "openai":
      return new OpenAiMeter(rules, wires);
    case "none":
      return new UncachedMeter(rules, wires);
    case "simple":
      return new SimpleMeter(rules);
  }
}

function bill(rules: PriceRules, inputTokens: number, cacheReadTokens: number, cacheWriteTokens: number): RequestBill {
  const uncachedTokens = inputTokens - cacheReadTokens - cacheWriteTokens;
  return {
    inputTokens,
    cacheReadTokens,
    cacheWriteTokens,
    uncachedTokens,
    billed: cacheReadTokens * rules.read + cacheWriteTokens * rules.write + uncachedTokens * rules.uncached,
  };
}

// ---- The request as content blocks ----------------------------------------------------------

const OPENAI_CACHE_STEP = 128;

/** One content block as the provider receives it: a hash of its wire text, and its tokens. */
interface WireBlock {
  h1: number;
  h2: number;
  tokens: number;
  thinking: boolean;
}

/** One provider message: consecutive tool results share one (Pi groups them into one user message). */
interface WireMessage {
  role: "user" | "assistant" | "system";
  /** A user message that is not tool results: it ends the tool-use loop before it. */
  userTurn: boolean;
  /** Tool results join a preceding tool-result message. */
  toolResults: boolean;
  blocks: WireBlock[];
}

/** How many keys a WireCache keeps before it starts again. */
const MAX_KEYS = 50_000;

function ends(text: unknown): string {
  if (typeof text !== "string") return "-";
  return text.length <= 48 ? text : `${text.length}:${text.slice(0, 24)}${text.slice(-24)}`;
}

/**
 * What a message is, computed without serialising it: its fingerprint, and what a key that no
 * position narrows down needs besides (its custom type and error flag, and the ends of its texts,
 * tool calls and their string arguments).
 */
function wireKey(message: AgentMessage): string {
  const m: { customType?: unknown; isError?: unknown; content?: unknown; summary?: unknown; command?: unknown; output?: unknown } = message;
  let key = `${messageFingerprint(message)}|${String(m.customType ?? "")}|${m.isError === true ? 1 : 0}`;
  if (typeof m.content === "string") key += `|s${ends(m.content)}`;
  else if (Array.isArray(m.content)) {
    for (const b of m.content) {
      if (!isRecord(b)) continue;
      if (b.type === "toolCall") {
        key += `|c${String(b.id)}${String(b.name)}`;
        if (typeof b.arguments === "object" && b.arguments !== null) {
          for (const [name, value] of Object.entries(b.arguments)) key += `,${name}=${typeof value === "string" ? ends(value) : typeof value}`;
        }
      } else key += `|${String(b.type)}${ends(b.text ?? b.thinking ?? b.data)}${typeof b.thinkingSignature === "string" ? b.thinkingSignature.length : ""}`;
    }
  }
  if (m.summary !== undefined || m.command !== undefined) key += `|${ends(m.summary)}${ends(m.command)}${ends(m.output)}`;
  return key;
}

/**
 * Messages as the provider receives them, each converted once. Serialising and hashing a message
 * costs as much as reading it, and a meter bills each message again on every request. A message
 * object is found again by identity (messages are not edited in place once sent: a changed
 * message is a new object); the fresh copy Pi hands over on each request, by what survives a copy
 * (wireKey). Bounded: the keys are cleared whole when full (a message may then be converted twice).
 */
export class WireCache {
  private readonly byObject = new WeakMap<AgentMessage, WireMessage | null>();
  private readonly byKey = new Map<string, WireMessage | null>();

  /** The provider's message for `message`; null for one Pi does not send. */
  wireOf(message: AgentMessage): WireMessage | null {
    let wire = this.byObject.get(message);
    if (wire === undefined) {
      const key = wireKey(message);
      wire = this.byKey.get(key);
      if (wire === undefined) {
        wire = toWire(message);
        if (this.byKey.size >= MAX_KEYS) this.byKey.clear();
        this.byKey.set(key, wire);
      }
      this.byObject.set(message, wire);
    }
    return wire;
  }
}

function block(value: unknown, thinking = false): WireBlock {
  const text = jsonText(value) ?? "";
  let h1 = 0x811c9dc5;
  let h2 = 0x9747b28c;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) ^ (h2 >>> 15);
  }
  return { h1: h1 >>> 0, h2: h2 >>> 0, tokens: estimateTokens(text.length), thinking };
}

function userContentBlocks(content: string | readonly (TextContent | ImageContent)[]): WireBlock[] {
  if (typeof content === "string") return content.trim() ? [block({ type: "text", text: content })] : [];
  const out: WireBlock[] = [];
  for (const item of content) {
    if (!item) continue;
    if (item.type === "image") out.push(imageBlock(item));
    else if (item.type === "text" && item.text.trim()) out.push(block({ type: "text", text: item.text }));
  }
  return out;
}

function imageBlock(image: ImageContent): WireBlock {
  return block({ type: "image", source: { type: "base64", media_type: image.mimeType, data: image.data } });
}

function toolResultBlock(message: ToolResultMessage): WireBlock {
  const items = message.content ?? [];
  const content = items.some((c) => c?.type === "image")
    ? items.map((c) => (c.type === "image" ? { type: "image", source: { type: "base64", media_type: c.mimeType, data: c.data } } : { type: "text", text: c.text }))
    : items.map((c) => (c as TextContent).text).join("\n");
  return block({ type: "tool_result", tool_use_id: message.toolCallId, content, is_error: message.isError });
}

function assistantBlocks(message: AssistantMessage): WireBlock[] {
  const out: WireBlock[] = [];
  for (const b of message.content ?? []) {
    if (!b) continue;
    if (b.type === "text") {
      if (b.text.trim()) out.push(block({ type: "text", text: b.text }));
    } else if (b.type === "thinking") {
      if (b.redacted) out.push(block({ type: "redacted_thinking", data: b.thinkingSignature }, true));
      else if (b.thinkingSignature?.trim()) out.push(block({ type: "thinking", thinking: b.thinking, signature: b.thinkingSignature }, true));
      // Unsigned thinking (an aborted stream) is sent as plain text, which the API keeps.
      else if (b.thinking.trim()) out.push(block({ type: "text", text: b.thinking }));
    } else if (b.type === "toolCall") {
      out.push(block({ type: "tool_use", id: b.id, name: b.name, input: b.arguments ?? {} }));
    }
  }
  return out;
}

/** Pi's conversion to the provider's messages: custom and summary messages become user text. */
function toWire(message: AgentMessage): WireMessage | null {
  const user = (blocks: WireBlock[]): WireMessage | null => (blocks.length ? { role: "user", userTurn: true, toolResults: false, blocks } : null);
  switch (message.role) {
    case "user":
    case "custom":
      return user(userContentBlocks(message.content));
    case "assistant": {
      if (isFailedTurn(message)) return null;
      const blocks = assistantBlocks(message);
      return blocks.length ? { role: "assistant", userTurn: false, toolResults: false, blocks } : null;
    }
    case "toolResult":
      return { role: "user", userTurn: false, toolResults: true, blocks: [toolResultBlock(message)] };
    case "bashExecution": {
      const text = userShellText(message);
      return text === undefined ? null : user([block({ type: "text", text })]);
    }
    case "branchSummary":
      return user([block({ type: "text", text: `${BRANCH_SUMMARY_PREFIX}${message.summary}</summary>` })]);
    case "compactionSummary":
      return user([block({ type: "text", text: `${COMPACTION_SUMMARY_PREFIX}${message.summary}\n</summary>` })]);
    case "system": {
      const blocks = userContentBlocks(message.content);
      return blocks.length ? { role: "system", userTurn: false, toolResults: false, blocks } : null;
    }
    default:
      return null;
  }
}

// The wrappers Pi puts around these messages (coding-agent's messages.ts), so their size is right.
const BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";

/**
 * The request as a chain of block boundaries: `keys[i]` identifies the prefix up to and including
 * boundary i (a running hash, so comparing two prefixes costs one lookup), `tokens[i]` is that
 * prefix's size. `breakpoints` are boundary indexes, in order.
 */
interface Chain {
  keys: number[];
  tokens: number[];
  total: number;
  breakpoints: number[];
  /** For each of the request's messages, the wire message it starts at (messages Pi drops map to the next one). */
  wireIndexOf: number[];
  /** For each wire message, the boundaries before it, then all of them. */
  keysAtWire: number[];
  /** Leading keys that are those of the request the meter billed before (0 without a memo). */
  known: number;
}

/**
 * What a meter keeps of the request it billed last. Requests of one conversation mostly begin
 * with the previous one's messages, and a replay or a view hands over the same message objects:
 * the next chain is then hashed on from the first message that differs, not from the start.
 */
interface ChainMemo {
  tools: string;
  system: string;
  messages: AgentMessage[];
  wire: WireMessage[];
  lastUserTurn: number;
  /** The running hash and size before each wire message, then after the last. */
  aAt: number[];
  bAt: number[];
  totalAt: number[];
  chain: Chain;
  headBreakpoints: number;
}

const HEAD = 0x3c6ef372;
const MESSAGE_START = 0x1b873593;

const hasThinking = (w: WireMessage) => w.blocks.some((b) => b.thinking);

/**
 * The chain of `request`. With `thinkingKept` every thinking block is input and part of the prefix;
 * without, thinking before the latest user turn is left out and the current loop's is input but
 * keyed as if absent. `keep` holds the memo of the request built before (of the same setting).
 */
function chainOf(request: ProviderRequest, wires: WireCache, thinkingKept: boolean, keep?: { memo?: ChainMemo }): Chain {
  const prev = keep?.memo;
  // Leading messages that are the previous request's own objects (so the same wire messages).
  let shared = -1;
  if (prev && prev.tools === request.tools && prev.system === request.system) {
    const n = Math.min(prev.messages.length, request.messages.length);
    shared = 0;
    while (shared < n && prev.messages[shared] === request.messages[shared]) shared++;
  }
  const carried = prev !== undefined && shared >= 0;
  const chain: Chain = carried ? prev.chain : { keys: [], tokens: [], total: 0, breakpoints: [], wireIndexOf: [], keysAtWire: [], known: 0 };
  const { keys, tokens, breakpoints, wireIndexOf, keysAtWire } = chain;
  const wire = carried ? prev.wire : [];
  const aAt = carried ? prev.aAt : [];
  const bAt = carried ? prev.bAt : [];
  const totalAt = carried ? prev.totalAt : [];
  let a = HEAD;
  let b = ~HEAD;
  let total = 0;
  const mix = (x: number, y: number) => {
    a = Math.imul(a ^ x, 0x01000193) ^ (a >>> 13);
    b = Math.imul(b ^ y, 0x5bd1e995) ^ (b >>> 15);
    a = Math.imul(a ^ y, 0x85ebca6b);
    b = Math.imul(b ^ x, 0xc2b2ae35);
  };
  const boundary = () => {
    keys.push((a >>> 0) * 0x200000 + (b >>> 11));
    tokens.push(total);
  };
  const push = (w: WireBlock, transparent: boolean) => {
    total += w.tokens;
    if (transparent) return;
    mix(w.h1, w.h2);
    boundary();
  };

  let headBreakpoints = carried ? prev.headBreakpoints : 0;
  if (!carried) {
    if (request.tools) {
      push(block(request.tools), false);
      breakpoints.push(keys.length - 1);
    }
    if (request.system) {
      mix(MESSAGE_START, 0x5f3759df);
      push(block({ type: "text", text: request.system }), false);
      breakpoints.push(keys.length - 1);
    }
    headBreakpoints = breakpoints.length;
  }

  // The wire messages: the shared messages' as they were, then the rest's.
  const sharedWires = carried ? (shared < wireIndexOf.length ? wireIndexOf[shared]! : wire.length) : 0;
  wire.length = sharedWires;
  wireIndexOf.length = carried ? shared : 0;
  for (let i = carried ? shared : 0; i < request.messages.length; i++) {
    wireIndexOf.push(wire.length);
    const w = wires.wireOf(request.messages[i]!);
    if (w) wire.push(w);
  }
  let lastUserTurn = -1;
  for (let i = wire.length - 1; i >= 0 && lastUserTurn < 0; i--) if (wire[i]!.userTurn) lastUserTurn = i;

  // Hashing carries on after the shared wire messages, or from where their thinking counts
  // otherwise now that the latest user turn moved.
  let from = sharedWires;
  if (carried && !thinkingKept && prev.lastUserTurn !== lastUserTurn) {
    const low = Math.max(0, Math.min(prev.lastUserTurn, lastUserTurn));
    const high = Math.min(Math.max(prev.lastUserTurn, lastUserTurn), sharedWires);
    for (let i = low; i < high; i++) {
      if (hasThinking(wire[i]!)) {
        from = low;
        break;
      }
    }
  }
  if (carried) {
    a = aAt[from]!;
    b = bAt[from]!;
    total = totalAt[from]!;
    keys.length = tokens.length = keysAtWire[from]!;
    breakpoints.length = headBreakpoints;
    aAt.length = bAt.length = totalAt.length = keysAtWire.length = from;
  }
  chain.known = carried ? keys.length : 0;

  for (let i = from; i < wire.length; i++) {
    aAt.push(a);
    bAt.push(b);
    totalAt.push(total);
    keysAtWire.push(keys.length);
    const w = wire[i]!;
    const joinsPrevious = w.toolResults && i > 0 && wire[i - 1]!.toolResults;
    if (!joinsPrevious) mix(MESSAGE_START, w.role === "assistant" ? 1 : w.role === "system" ? 2 : 3);
    for (const blk of w.blocks) {
      if (blk.thinking && !thinkingKept) {
        // Earlier turns' thinking is not input at all where the provider drops it (older Claude
        // models strip it, OpenAI discards reasoning after each turn); the current loop's is input,
        // but it is keyed as if absent, so it never breaks a prefix.
        if (i < lastUserTurn) continue;
        push(blk, true);
      } else push(blk, false);
    }
  }
  aAt.push(a);
  bAt.push(b);
  totalAt.push(total);
  keysAtWire.push(keys.length);
  const last = wire[wire.length - 1];
  if (last && last.role !== "assistant" && keys.length) breakpoints.push(keys.length - 1);
  for (const m of request.extraBreakpoints ?? []) {
    if (m < 0 || m >= wireIndexOf.length) continue;
    // The boundary after the message's last block: the last one before the next message's wire.
    const boundary = keysAtWire[m + 1 < wireIndexOf.length ? wireIndexOf[m + 1]! : wire.length]! - 1;
    if (boundary >= 0) breakpoints.push(boundary);
  }
  chain.total = total;
  if (keep) keep.memo = { tools: request.tools, system: request.system, messages: request.messages.slice(), wire, lastUserTurn, aAt, bAt, totalAt, chain, headBreakpoints };
  return chain;
}

/**
 * The chain of `request`: the one the meter built when it billed that very request last (the
 * policy asks about the last request sent, several times a turn), else built anew.
 */
function chainFor(request: ProviderRequest, wires: WireCache, thinkingKept: boolean, last: { memo?: ChainMemo }): Chain {
  const memo = last.memo;
  if (memo && memo.tools === request.tools && memo.system === request.system && memo.messages.length === request.messages.length && memo.messages.every((m, i) => m === request.messages[i])) return memo.chain;
  return chainOf(request, wires, thinkingKept);
}

/** Boundaries of `chain` before message `changedFrom` (all of them when it is past the end). */
function boundariesBefore(chain: Chain, changedFrom: number): number {
  return changedFrom < chain.wireIndexOf.length ? chain.keysAtWire[chain.wireIndexOf[Math.max(0, changedFrom)]!]! : chain.keys.length;
}

class AnthropicMeter implements CacheMeter {
  private readonly entries = new Set<number>();
  private readonly last: { memo?: ChainMemo } = {};
  private readonly rules: PriceRules;
  private readonly wires: WireCache;

  constructor(rules: PriceRules, wires: WireCache) {
    this.rules = rules;
    this.wires = wires;
  }

  bill(request: ProviderRequest): RequestBill {
    const { keys, tokens, total, breakpoints } = chainOf(request, this.wires, this.rules.thinkingKept, this.last);
    let read = 0;
    for (const bp of breakpoints) {
      for (let j = bp; j >= 0 && j >= bp - ANTHROPIC_LOOKBACK_BLOCKS; j--) {
        if (this.entries.has(keys[j]!)) {
          if (tokens[j]! > read) read = tokens[j]!;
          break;
        }
      }
    }
    let cachedEnd = 0;
    for (const bp of breakpoints) {
      if (tokens[bp]! < this.rules.minCachedTokens) continue;
      this.entries.add(keys[bp]!);
      cachedEnd = Math.max(cachedEnd, tokens[bp]!);
    }
    return bill(this.rules, total, read, Math.max(0, cachedEnd - read));
  }

  readAfterChange(request: ProviderRequest, changedFrom: number, nextBlocks: number, cachedBefore?: number): ReadAfterChange {
    const chain = chainFor(request, this.wires, this.rules.thinkingKept, this.last);
    const limit = boundariesBefore(chain, changedFrom);
    // The next request's breakpoints: the head's (system, tools), unchanged, the caller's own, and its last block.
    let read = 0;
    for (const bp of chain.breakpoints) if (bp < limit && this.entries.has(chain.keys[bp]!)) read = Math.max(read, chain.tokens[bp]!);
    if (cachedBefore !== undefined && cachedBefore <= changedFrom) {
      const at = boundariesBefore(chain, cachedBefore) - 1;
      if (at >= 0 && chain.tokens[at]! >= this.rules.minCachedTokens) read = Math.max(read, chain.tokens[at]!);
    }
    const end = chain.keys.length - 1 + nextBlocks;
    for (let j = Math.min(limit - 1, end); j >= 0 && j >= end - ANTHROPIC_LOOKBACK_BLOCKS; j--) {
      if (this.entries.has(chain.keys[j]!)) {
        read = Math.max(read, chain.tokens[j]!);
        break;
      }
    }
    return { totalTokens: chain.total, readTokens: read };
  }
}

class OpenAiMeter implements CacheMeter {
  private readonly seen = new Set<number>();
  private readonly last: { memo?: ChainMemo } = {};
  private readonly rules: PriceRules;
  private readonly wires: WireCache;

  constructor(rules: PriceRules, wires: WireCache) {
    this.rules = rules;
    this.wires = wires;
  }

  bill(request: ProviderRequest): RequestBill {
    const { keys, tokens, total, known } = chainOf(request, this.wires, this.rules.thinkingKept, this.last);
    // The keys the previous request shares with this one were all seen when it was billed.
    let shared = known > 0 ? tokens[known - 1]! : 0;
    for (let j = known; j < keys.length && this.seen.has(keys[j]!); j++) shared = tokens[j]!;
    for (let j = known; j < keys.length; j++) this.seen.add(keys[j]!);
    const read = this.read(shared);
    // Where the model charges for writes, the part not read is written for the next request.
    const written = this.rules.write > this.rules.uncached && total >= this.rules.minCachedTokens ? total - read : 0;
    return bill(this.rules, total, read, written);
  }

  readAfterChange(request: ProviderRequest, changedFrom: number): ReadAfterChange {
    const chain = chainFor(request, this.wires, this.rules.thinkingKept, this.last);
    const { keys, tokens, total } = chain;
    const limit = boundariesBefore(chain, changedFrom);
    let shared = 0;
    for (let j = 0; j < limit && this.seen.has(keys[j]!); j++) shared = tokens[j]!;
    return { totalTokens: total, readTokens: this.read(shared) };
  }

  /** OpenAI reads a shared prefix of the minimum or more, in 128-token steps. */
  private read(shared: number): number {
    const min = this.rules.minCachedTokens;
    return shared < min ? 0 : min + Math.floor((shared - min) / OPENAI_CACHE_STEP) * OPENAI_CACHE_STEP;
  }
}

/** A model without cache prices: every token is sent uncached, and nothing is read after a change. */
class UncachedMeter implements CacheMeter {
  private readonly last: { memo?: ChainMemo } = {};
  private readonly rules: PriceRules;
  private readonly wires: WireCache;

  constructor(rules: PriceRules, wires: WireCache) {
    this.rules = rules;
    this.wires = wires;
  }

  bill(request: ProviderRequest): RequestBill {
    return bill(this.rules, chainOf(request, this.wires, this.rules.thinkingKept, this.last).total, 0, 0);
  }

  readAfterChange(request: ProviderRequest): ReadAfterChange {
    return { totalTokens: chainFor(request, this.wires, this.rules.thinkingKept, this.last).total, readTokens: 0 };
  }
}

// ---- The simple model ------------------------------------------------------------------------

/** One message as the simple model serialises it (its own approximation of the Anthropic shape). */
function simpleMessageText(message: AgentMessage): string {
  const json = (value: object): string => jsonText(value) ?? "";
  const textBlocks = (content: unknown): { type: "text"; text: string }[] => {
    if (typeof content === "string") return [{ type: "text", text: content }];
    if (!Array.isArray(content)) return [];
    return content.filter((b) => b && b.type === "text").map((b) => ({ type: "text" as const, text: String(b.text) }));
  };
  switch (message.role) {
    case "assistant":
      return json({
        role: "assistant",
        content: (message.content ?? []).map((b) =>
          b.type === "thinking"
            ? { type: "thinking", thinking: b.thinking, signature: b.thinkingSignature ?? "" }
            : b.type === "toolCall"
              ? { type: "tool_use", id: b.id, name: b.name, input: b.arguments }
              : { type: "text", text: b.text },
        ),
      });
    case "toolResult":
      return json({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: message.toolCallId, content: textBlocks(message.content), is_error: message.isError === true }],
      });
    case "bashExecution":
      // `!!` output is kept in the session and never sent.
      return message.excludeFromContext ? "" : json({ role: "user", content: [{ type: "text", text: `$ ${message.command}\n${message.output}` }] });
    case "branchSummary":
    case "compactionSummary":
      return json({ role: "user", content: [{ type: "text", text: message.summary }] });
    default:
      return json({ role: "user", content: textBlocks(message.content) });
  }
}

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

class SimpleMeter implements CacheMeter {
  private previous: string[] | undefined;
  private previousHead = -1;
  private readonly rules: PriceRules;

  constructor(rules: PriceRules) {
    this.rules = rules;
  }

  bill(request: ProviderRequest): RequestBill {
    const headChars = request.system.length + request.tools.length;
    const parts = request.messages.map(simpleMessageText);
    let total = headChars;
    for (const p of parts) total += p.length;
    let cached = 0;
    if (this.previous && this.previousHead === headChars) {
      cached = headChars;
      const prev = this.previous;
      for (let i = 0; i < parts.length && i < prev.length; i++) {
        if (parts[i] === prev[i]) {
          cached += parts[i]!.length;
          continue;
        }
        cached += commonPrefixLength(parts[i]!, prev[i]!);
        break;
      }
    }
    this.previous = parts;
    this.previousHead = headChars;
    const tokens = total / CHARS_PER_TOKEN;
    const cachedTokens = cached / CHARS_PER_TOKEN;
    return bill(this.rules, tokens, cachedTokens, tokens - cachedTokens);
  }

  /** The simple model reads the common prefix with the previous request: everything before the change. */
  readAfterChange(request: ProviderRequest, changedFrom: number): ReadAfterChange {
    let total = request.system.length + request.tools.length;
    let read = total;
    request.messages.forEach((m, i) => {
      const chars = simpleMessageText(m).length;
      total += chars;
      if (i < changedFrom) read += chars;
    });
    return { totalTokens: total / CHARS_PER_TOKEN, readTokens: read / CHARS_PER_TOKEN };
  }
}
