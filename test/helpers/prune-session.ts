// Sessions played through the pruner's own steps (capture, flush, chain compression), for the unit
// tests of core's prune and render modules: a SessionBuilder, a summarizer that behaves like a
// well-behaved model, and the few lookups those tests share.
import { SessionBuilder } from "./session-builder.ts";
import type { PruneConfig } from "../../core/src/settings/config.ts";
import { captureBatch, flushBatches, type Batch } from "../../core/src/prune/flush.ts";
import { compressChains } from "../../core/src/prune/chain-plan.ts";
import { emptyIndex, rebuildIndex, type PruneIndex } from "../../core/src/prune/prune-index.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import type { PersistEntry } from "../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantMessage, CustomMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";
import { contentText } from "../../core/src/shapes/messages.ts";
import type { Summarizer } from "../../core/src/prune/summarizer-prompts.ts";

/** A tool output big enough to be worth summarizing. */
export const big = (label: string, n = 1500) => `${label}\n${"x".repeat(n)}`;

/**
 * A summarizer that names every ref it is given, like a well-behaved model; asked to fuse a
 * chain's summaries, it names every ref of them in one bullet.
 */
export const echoSummarizer: Summarizer = async (request) => {
  if (request.systemPrompt.includes("merge several summaries")) {
    const refs = [...request.prompt.matchAll(/`(t\d+)`/g)].map((m) => m[1]);
    return { text: `- fused: ${[...new Set(refs)].map((r) => `\`${r}\``).join(" ")} belong together`, usage: { input: 50, output: 10, cost: 0.0005 } };
  }
  const refs = [...request.prompt.matchAll(/^### (t\d+) — (\S+)/gm)].map((m) => `- \`${m[1]}\` ${m[2]} output, summarized`);
  return { text: refs.join("\n"), usage: { input: 100, output: 20, cost: 0.001 } };
};

/** The messages Pi would send for the session so far: the render's input. */
export function piContext(b: SessionBuilder): AgentMessage[] {
  return buildPiContext(b.entries).map((c) => c.message);
}

/** The index as the pruner rebuilds it from the session's entries. */
export function freshIndex(b: SessionBuilder): PruneIndex {
  return rebuildIndex(b.entries).index;
}

/** Appends what a flush or a compression returned, as the extension does through Pi. */
export function persist(b: SessionBuilder, entries: readonly PersistEntry[]): void {
  for (const e of entries) {
    if (e.kind === "custom") b.custom(e.customType, e.data);
    else b.customMessage(e.customType, e.content, e.details);
  }
}

/** The session's message entries (no custom messages), in order. */
export function messagesOf(b: SessionBuilder): AgentMessage[] {
  return b.entries.filter((e) => e.type === "message").map((e) => (e as { message: AgentMessage }).message);
}

/** The newest assistant turn and the tool results after it. */
export function lastTurn(b: SessionBuilder): { assistant: AssistantMessage; results: ToolResultMessage[] } {
  const messages = messagesOf(b);
  let i = messages.length - 1;
  const results: ToolResultMessage[] = [];
  while (i >= 0 && messages[i]!.role === "toolResult") results.unshift(messages[i--] as ToolResultMessage);
  return { assistant: messages[i] as AssistantMessage, results };
}

/** The newest turn as the live pruner captures it (turn 1). */
export function lastBatch(b: SessionBuilder, config: PruneConfig): Batch {
  const { assistant, results } = lastTurn(b);
  return captureBatch(assistant, results, 1, config).batch!;
}

export function resultTexts(messages: readonly AgentMessage[]): string[] {
  return messages.filter((m) => m.role === "toolResult").map((m) => contentText((m as ToolResultMessage).content));
}

/** The text of every `<compressed-chain>` message. */
export function chainBlocks(messages: readonly AgentMessage[]): string[] {
  return messages.filter((m) => m.role === "custom" && m.customType === "context-prune-chain").map((m) => contentText((m as CustomMessage).content));
}

export interface CallSpec {
  name: string;
  args?: Record<string, unknown>;
  result: string;
  isError?: boolean;
  id?: string;
}

/**
 * One chain: a prompt, tool turns (each captured, and all flushed on the final reply as the live
 * pruner does unless `flush` is false), then a final reply.
 */
export async function playChain(
  b: SessionBuilder,
  index: PruneIndex,
  config: PruneConfig,
  prompt: string,
  turns: CallSpec[][],
  options: { thinking?: boolean; flush?: boolean; final?: string } = {},
): Promise<void> {
  b.user(prompt);
  const batches: Batch[] = [];
  for (const turn of turns) {
    b.assistant({ thinking: options.thinking ? `thinking about ${prompt}` : undefined, toolCalls: turn.map((c) => ({ name: c.name, args: c.args ?? {}, id: c.id })) });
    const ids = b.lastToolCallIds;
    turn.forEach((c, i) => b.toolResult(ids[i]!, c.name, c.result, { isError: c.isError }));
    const messages = piContext(b);
    const results = messages.slice(-turn.length) as ToolResultMessage[];
    const assistant = messages[messages.length - turn.length - 1] as AssistantMessage;
    const { batch } = captureBatch(assistant, results, 1, config);
    if (batch) batches.push(batch);
  }
  b.assistant({ thinking: options.thinking ? `final thoughts on ${prompt}` : undefined, text: options.final ?? `${prompt}: done` });
  if (options.flush !== false && batches.length) {
    const flushed = await flushBatches(batches, index, config, echoSummarizer);
    persist(b, flushed.entries);
  }
}

/**
 * Four chains, the oldest compressed (rolling window 3): "one" reads a skill file (protected by
 * the `**\/skills/**\/*.md` glob) and src/a.ts, then runs `todo` (protected when `config` protects
 * that tool); chains 2 to 4 read one file each.
 */
export async function compressedSession(config: PruneConfig, options: { thinking?: boolean } = {}): Promise<SessionBuilder> {
  const b = new SessionBuilder();
  const index = freshIndex(b);
  await playChain(
    b,
    index,
    config,
    "one",
    [
      [
        { name: "read", args: { path: "skills/release/SKILL.md" }, result: "# Release\n1. run the gate" },
        { name: "read", args: { path: "src/a.ts" }, result: big("A") },
      ],
      [{ name: "todo", args: { op: "list" }, result: "- [ ] ship it" }],
    ],
    options,
  );
  for (let n = 2; n <= 4; n++) await playChain(b, index, config, `chain ${n}`, [[{ name: "read", args: { path: `src/${n}.ts` }, result: big(`file ${n}`) }]], options);
  const result = await compressChains(piContext(b), index, config, echoSummarizer, { now: 1 });
  persist(b, result.entries);
  return b;
}

/** "fix the build": one turn reads src/a.ts and docs/guide.md, both summarized by one flush, then "done". */
export async function summarizedReads(config: PruneConfig): Promise<{ b: SessionBuilder; index: PruneIndex }> {
  const b = new SessionBuilder().user("fix the build");
  b.assistant({ toolCalls: [{ name: "read", args: { path: "src/a.ts" } }, { name: "read", args: { path: "docs/guide.md" } }] });
  b.toolResult("call_1", "read", big("A")).toolResult("call_2", "read", big("guide"));
  const batch = lastBatch(b, config);
  b.assistant("done");
  const index = emptyIndex();
  const flushed = await flushBatches([batch], index, config, echoSummarizer);
  persist(b, flushed.entries);
  return { b, index };
}
