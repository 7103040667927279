// Replays a session script turn by turn through one pruning policy or peer and prices every
// request under each price model (core/src/cost/cache-rules.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayHost, type HostedExtension } from "./pi-host.ts";
import { CHARS_PER_TOKEN } from "../../core/src/shapes/size.ts";
import { observationMasking } from "./masking.ts";
import type { ExtensionFactory, PeerInfo } from "./peers.ts";
import { WireCache, cacheMeter, type CacheMeter } from "../../core/src/cost/cache-rules.ts";
import { CACHE_RULES, PRICE_MODELS, type PriceModelName } from "../../core/src/cost/price-rules.ts";
import type { ScriptStep } from "./gen.ts";
import { occurrenceKey, type AgentMessage } from "../../core/src/shapes/messages.ts";
import type { AnyEntry } from "../../core/src/shapes/entries.ts";
import { frontierIn, frontierQueue } from "../../core/src/prune/flush-choice.ts";
import { unflushedBatches } from "../../core/src/prune/pending-batches.ts";
import { rebuildIndex } from "../../core/src/prune/prune-index.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";

export interface Policy {
  id: string;
  label: string;
  /** pi-pruner's `contextPrune` settings; null = Pi without the extension. Ignored when `extension` is set. */
  contextPrune: Record<string, unknown> | null;
  /** Another extension than pi-pruner: a peer or a bench policy, with the settings.json it reads. */
  extension?: HostedExtension;
  /** Summarize each batch right after the model has seen it once (`/pruner now` before every request). */
  naive?: boolean;
  /** A peer (not one of pi-pruner's own policies). */
  peer?: boolean;
}

export const POLICIES: Policy[] = [
  { id: "none", label: "no pruning", contextPrune: null },
  { id: "defaults", label: "pi-pruner defaults", contextPrune: {} },
  { id: "strip", label: "defaults + thinking strip", contextPrune: { thinkingStrip: { enabled: true, keepLastTurns: 16 } } },
  { id: "naive", label: "naive per-turn summarization", contextPrune: {}, naive: true },
];

export const MASKING_POLICY: Policy = { id: "masking", label: "observation masking (M = 10)", contextPrune: null, extension: { factory: observationMasking, settings: {} }, peer: true };

/** pi-condense's settings for the replay: it is off by default, and `enabled` alone turns it on. */
export const PI_CONDENSE_SETTINGS = { contextPrune: { enabled: true } };

export function piCondensePolicy(factory: ExtensionFactory, info: PeerInfo): Policy {
  return { id: "picondense", label: `pi-condense ${info.version}`, contextPrune: null, extension: { factory, settings: PI_CONDENSE_SETTINGS }, peer: true };
}

/** What a session costs under one price model. */
interface PolicyCost {
  /** Billed input-token equivalents: main requests + the summarizer's input (1×) and output (at the output price). */
  billed: number;
  mainBilled: number;
  /** Input tokens of the main requests as these rules count them. */
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  uncachedTokens: number;
  summarizerBilled: number;
  cacheHitRatio: number;
}

export interface ReplayResult {
  policy: string;
  requests: number;
  /** The bill under each price model. */
  cost: Record<PriceModelName, PolicyCost>;
  /** Input tokens of all main requests (everything sent, head included), unpriced. */
  mainTokens: number;
  peakContext: number;
  summarizerCalls: number;
  summarizerInputTokens: number;
  summarizerOutputTokens: number;
  /** Context size (tokens, head included) of each request, in order. */
  perRequest: number[];
  /** Thinking blocks the model was sent in the last request. */
  thinkingBlocksLast: number;
  /** Assistant messages with thinking in the last request of Pi's own context. */
  thinkingBlocksRaw: number;
  /** What the last request carried, in tokens, by kind. */
  composition: Composition;
  /** Tokens, summed over all requests, of tool results after the request's last user prompt (the open task, which the defaults keep raw until its final reply). */
  openTaskResultTokens: number;
  /** Tokens, summed over all requests, of thinking blocks. */
  thinkingTokens: number;
  /** Requests whose messages differ from Pi's own context (the extension rewrote something). */
  rewrittenRequests: number;
  /** pi-pruner's replay on the OpenAI model, where its OpenAI bill comes from (its other figures are the Anthropic run's). */
  openAiRun?: { summarizerCalls: number; peakContext: number };
  notes: string[];
}

interface Composition {
  thinking: number;
  toolArgs: number;
  toolResults: number;
  summaries: number;
  text: number;
}

/** Tokens of the messages by kind (content only, without the JSON envelope). */
function composition(messages: readonly AgentMessage[]): Composition {
  const c: Composition = { thinking: 0, toolArgs: 0, toolResults: 0, summaries: 0, text: 0 };
  const len = (content: unknown) =>
    typeof content === "string" ? content.length : Array.isArray(content) ? content.reduce((n, b) => n + (b?.type === "text" ? String(b.text).length : 0), 0) : 0;
  for (const m of messages) {
    if (m.role === "assistant") {
      for (const b of m.content ?? []) {
        if (b.type === "thinking") c.thinking += b.thinking.length + (b.thinkingSignature?.length ?? 0);
        else if (b.type === "toolCall") c.toolArgs += JSON.stringify(b.arguments).length;
        else if (b.type === "text") c.text += b.text.length;
      }
    } else if (m.role === "toolResult") c.toolResults += len(m.content);
    else if (m.role === "custom") c.summaries += len(m.content);
    else c.text += len((m as { content?: unknown }).content);
  }
  for (const k of Object.keys(c) as (keyof Composition)[]) c[k] = Math.round(c[k] / CHARS_PER_TOKEN);
  return c;
}

/** Tool-result tokens after the last user prompt, and thinking tokens anywhere, in one request. */
function openTaskTokens(messages: readonly AgentMessage[]): { results: number; thinking: number } {
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      lastUser = i;
      break;
    }
  }
  let results = 0;
  let thinking = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "toolResult" && i > lastUser) for (const b of m.content) if (b.type === "text") results += b.text.length;
    if (m.role === "assistant") for (const b of m.content ?? []) if (b.type === "thinking") thinking += b.thinking.length + (b.thinkingSignature?.length ?? 0);
  }
  return { results: results / CHARS_PER_TOKEN, thinking: thinking / CHARS_PER_TOKEN };
}

function thinkingBlocks(messages: readonly AgentMessage[]): number {
  let n = 0;
  for (const m of messages) if (m.role === "assistant") for (const b of m.content ?? []) if (b.type === "thinking") n++;
  return n;
}

/** What the provider gets besides the messages: Pi's system prompt and tool declarations, measured on a real request. */
export interface PiHead {
  systemChars: number;
  toolsChars: number;
}

/** A stable stand-in of a given length for text the replay does not have verbatim (Pi's own system prompt and tools). */
function placeholderText(label: string, chars: number): string {
  const unit = `${label} (a stand-in of the recorded length). `;
  return unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
}

/**
 * The messages whose last block carries pi-pruner's own cache breakpoint in `sent` (the
 * extension adds it on Anthropic-style providers): the one before the first result of the oldest
 * pending batch, and, on the first request after that frontier moved, the one before the previous
 * frontier too. The pending batches are the branch's, as the runtime rebuilds them.
 */
class FrontierBreakpoints {
  private previous: string | undefined;

  next(sent: readonly AgentMessage[], branch: readonly AnyEntry[]): number[] {
    const pending = frontierQueue(unflushedBatches(branch, rebuildIndex(branch).index, DEFAULT_CONFIG), DEFAULT_CONFIG.minBatchChars);
    const at = frontierIn(sent, pending);
    const key = at === undefined ? undefined : resultKey(sent[at]!);
    const out: number[] = [];
    if (at !== undefined && at > 0) out.push(at - 1);
    if (this.previous !== undefined && this.previous !== key) {
      const before = sent.findIndex((m) => resultKey(m) === this.previous);
      if (before > 0) out.push(before - 1);
    }
    this.previous = key;
    return out;
  }
}

function resultKey(message: AgentMessage): string | undefined {
  return message.role === "toolResult" ? occurrenceKey(message.toolCallId, message.timestamp) : undefined;
}

/** The model each price model's session runs on, as Pi's registry names it: what pi-pruner decides by. */
const SESSION_MODELS: Record<"anthropic" | "openai", { provider: string; id: string; api: string }> = {
  anthropic: { provider: "anthropic", id: "claude-sonnet-4-6", api: "anthropic-messages" },
  openai: { provider: "openai", id: "gpt-5", api: "openai-responses" },
};

/** Whether `policy` is one of pi-pruner's own (it decides by the session's model). */
function decidesByModel(policy: Policy): boolean {
  return policy.contextPrune !== null && !policy.extension;
}

/**
 * The script replayed through `policy`, each price model's bill taken from a session on that
 * provider's model: pi-pruner decides for the provider it runs on, so its OpenAI bill comes from a
 * second replay on an OpenAI model (the simple model's with the Anthropic one). A peer or no
 * pruning decides nothing by the model and is replayed once.
 */
export async function replayPerProvider(script: readonly ScriptStep[], policy: Policy, piHead: PiHead): Promise<ReplayResult> {
  const anthropic = await replayScript(script, policy, piHead, SESSION_MODELS.anthropic);
  if (!decidesByModel(policy)) return anthropic;
  const openai = await replayScript(script, policy, piHead, SESSION_MODELS.openai);
  return { ...anthropic, cost: { ...anthropic.cost, openai: openai.cost.openai }, openAiRun: { summarizerCalls: openai.summarizerCalls, peakContext: openai.peakContext } };
}

async function replayScript(script: readonly ScriptStep[], policy: Policy, piHead: PiHead, model = SESSION_MODELS.anthropic): Promise<ReplayResult> {
  const root = mkdtempSync(join(tmpdir(), "pprb-replay-"));
  try {
    const host = await ReplayHost.create({ root, contextPrune: policy.contextPrune, extension: policy.extension, model });
    const extensionPrompt = host.extensionPromptText();
    const extensionTools = host.extensionToolsText();
    const system = placeholderText("Pi's system prompt", piHead.systemChars) + (extensionPrompt ? `\n${extensionPrompt}` : "");
    const tools = placeholderText("Pi's tool declarations", piHead.toolsChars) + (extensionTools ? `\n${extensionTools}` : "");
    // One wire cache for the meters: each message is converted to its wire blocks once.
    const wires = new WireCache();
    const meters = Object.fromEntries(CACHE_RULES.map((r) => [r, cacheMeter(r, wires)])) as Record<PriceModelName, CacheMeter>;
    const totals = Object.fromEntries(CACHE_RULES.map((r) => [r, { mainBilled: 0, inputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, uncachedTokens: 0 }])) as Record<PriceModelName, Omit<PolicyCost, "billed" | "summarizerBilled" | "cacheHitRatio">>;
    // pi-pruner's own breakpoint, for the price models that bill breakpoints.
    const frontiers = decidesByModel(policy) ? new FrontierBreakpoints() : undefined;
    const perRequest: number[] = [];
    let mainTokens = 0;
    let lastSent: readonly AgentMessage[] = [];
    let openTaskResultTokens = 0;
    let thinkingTokens = 0;
    let rewrittenRequests = 0;
    let lastRaw: AgentMessage[] = [];
    for (const step of script) {
      if (step.kind === "user") {
        await host.user(step.text);
        continue;
      }
      const sent = await host.request();
      if (host.lastRequestRewritten) rewrittenRequests++;
      let sentTokens = 0;
      const extraBreakpoints = frontiers?.next(sent, host.entries);
      for (const rules of CACHE_RULES) {
        const b = meters[rules].bill({ system, tools, messages: sent, extraBreakpoints });
        // The simple model counts every token sent: the context size.
        if (rules === "simple") sentTokens = b.inputTokens;
        const t = totals[rules];
        t.mainBilled += b.billed;
        t.inputTokens += b.inputTokens;
        t.cacheReadTokens += b.cacheReadTokens;
        t.cacheWriteTokens += b.cacheWriteTokens;
        t.uncachedTokens += b.uncachedTokens;
      }
      host.noteRequestChars(sentTokens * CHARS_PER_TOKEN);
      perRequest.push(sentTokens);
      mainTokens += sentTokens;
      lastSent = sent;
      const open = openTaskTokens(sent);
      openTaskResultTokens += open.results;
      thinkingTokens += open.thinking;
      if (policy.naive) await host.command("pruner", "now");
      await host.assistantTurn(step);
      lastRaw = host.contextMessages();
    }
    const summarizerInputTokens = host.summarizerCalls.reduce((n, c) => n + c.inputChars, 0) / CHARS_PER_TOKEN;
    const summarizerOutputTokens = host.summarizerCalls.reduce((n, c) => n + c.outputChars, 0) / CHARS_PER_TOKEN;
    const notes: string[] = [];
    if (host.unsupported.size) notes.push(`${policy.label}: host APIs it used that the replay host lacks: ${[...host.unsupported].join(", ")}`);
    const unfired = [...host.subscribed].filter((e) => !FIRED_EVENTS.includes(e));
    if (unfired.length) notes.push(`${policy.label}: handlers the replay does not fire: ${unfired.join(", ")}`);
    const cost = Object.fromEntries(
      CACHE_RULES.map((rules) => {
        const t = totals[rules];
        const summarizerBilled = summarizerInputTokens * PRICE_MODELS[rules].uncached + summarizerOutputTokens * PRICE_MODELS[rules].output;
        return [rules, { ...t, summarizerBilled, billed: t.mainBilled + summarizerBilled, cacheHitRatio: t.inputTokens ? t.cacheReadTokens / t.inputTokens : 0 }];
      }),
    ) as Record<PriceModelName, PolicyCost>;
    return {
      policy: policy.id,
      requests: perRequest.length,
      cost,
      mainTokens,
      peakContext: Math.max(...perRequest),
      summarizerCalls: host.summarizerCalls.length,
      summarizerInputTokens,
      summarizerOutputTokens,
      perRequest,
      thinkingBlocksLast: thinkingBlocks(lastSent),
      thinkingBlocksRaw: thinkingBlocks(lastRaw),
      composition: composition(lastSent),
      openTaskResultTokens,
      thinkingTokens,
      rewrittenRequests,
      notes,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The events the replay host fires (the others an extension subscribes to are reported). */
const FIRED_EVENTS = ["session_start", "before_agent_start", "context", "message_end", "turn_end", "session_tree"];
