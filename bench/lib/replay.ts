// Replays a session script turn by turn through one pruning policy and prices every request.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayHost } from "./pi-host.ts";
import { PrefixCacheMeter, PRICE, CHARS_PER_TOKEN } from "./pricing.ts";
import type { ScriptStep } from "./gen.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

export interface Policy {
  id: string;
  label: string;
  /** `contextPrune` settings; null = Pi without the extension. */
  contextPrune: Record<string, unknown> | null;
  /** Summarize each batch right after the model has seen it once (`/pruner now` before every request). */
  naive?: boolean;
}

export const POLICIES: Policy[] = [
  { id: "none", label: "no pruning", contextPrune: null },
  { id: "defaults", label: "pi-pruner defaults", contextPrune: {} },
  { id: "strip", label: "defaults + thinking strip", contextPrune: { thinkingStrip: { enabled: true, keepLastTurns: 16 } } },
  { id: "naive", label: "naive per-turn summarization", contextPrune: {}, naive: true },
];

export interface ReplayResult {
  policy: string;
  requests: number;
  /** Billed input-token equivalents: main requests under the cache model + summarizer input at 1×. */
  billed: number;
  mainBilled: number;
  /** Input tokens of all main requests, unpriced. */
  mainTokens: number;
  cachedTokens: number;
  cacheHitRatio: number;
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
  notes: string[];
}

export interface Composition {
  thinking: number;
  toolArgs: number;
  toolResults: number;
  summaries: number;
  text: number;
}

/** Tokens of the messages by kind (content only, without the JSON envelope). */
export function composition(messages: readonly AgentMessage[]): Composition {
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

/** `baseHeadChars`: Pi's system prompt and built-in tool declarations (measured on a real request). */
export async function replayScript(script: readonly ScriptStep[], policy: Policy, baseHeadChars: number): Promise<ReplayResult> {
  const root = mkdtempSync(join(tmpdir(), "pprb-replay-"));
  try {
    const host = await ReplayHost.create({ root, contextPrune: policy.contextPrune });
    const head = baseHeadChars + host.extensionHeadChars();
    const meter = new PrefixCacheMeter();
    const perRequest: number[] = [];
    let mainBilled = 0;
    let mainTokens = 0;
    let cachedTokens = 0;
    let lastSent: AgentMessage[] = [];
    let openTaskResultTokens = 0;
    let thinkingTokens = 0;
    let lastRaw: AgentMessage[] = [];
    for (const step of script) {
      if (step.kind === "user") {
        host.user(step.text);
        continue;
      }
      const sent = await host.request();
      const price = meter.price(head, sent);
      host.noteRequestChars(price.tokens * CHARS_PER_TOKEN);
      perRequest.push(price.tokens);
      mainBilled += price.billed;
      mainTokens += price.tokens;
      cachedTokens += price.cachedTokens;
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
    if (host.unsupported.size) notes.push(`host APIs the extension used that the replay host lacks: ${[...host.unsupported].join(", ")}`);
    const unfired = [...host.subscribed].filter((e) => !["session_start", "context", "turn_end", "session_tree"].includes(e));
    if (unfired.length) notes.push(`extension handlers the replay does not fire: ${unfired.join(", ")}`);
    return {
      policy: policy.id,
      requests: perRequest.length,
      billed: mainBilled + summarizerInputTokens * PRICE.uncached,
      mainBilled,
      mainTokens,
      cachedTokens,
      cacheHitRatio: mainTokens ? cachedTokens / mainTokens : 0,
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
      notes,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
