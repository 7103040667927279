import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches } from "../../../core/src/prune/flush.ts";
import { type PersistEntry } from "../../../core/src/shapes/entries.ts";
import { rebuildIndex, type PruneIndex } from "../../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { compressChains, planChainCompression } from "../../../core/src/prune/chain-plan.ts";
import { detectClosedChains } from "../../../core/src/prune/chains.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import type { AgentMessage, AssistantMessage, CustomMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";
import type { ChainData } from "../../../core/src/shapes/entries.ts";
import type { Summarizer } from "../../../core/src/prune/summarizer-prompts.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"] };
const big = (label: string, n = 1500) => `${label}\n${"x".repeat(n)}`;

const echoSummarizer: Summarizer = async (request) => {
  if (request.systemPrompt.includes("merge several summaries")) {
    const refs = [...request.prompt.matchAll(/`(t\d+)`/g)].map((m) => m[1]);
    return { text: `- fused: ${[...new Set(refs)].map((r) => `\`${r}\``).join(" ")} belong together`, usage: { input: 50, output: 10, cost: 0.0005 } };
  }
  const refs = [...request.prompt.matchAll(/^### (t\d+) — (\S+)/gm)].map((m) => `- \`${m[1]}\` ${m[2]} output, summarized`);
  return { text: refs.join("\n"), usage: { input: 100, output: 20, cost: 0.001 } };
};

interface CallSpec {
  name: string;
  args?: Record<string, unknown>;
  result: string;
  isError?: boolean;
  id?: string;
}

function context(b: SessionBuilder): AgentMessage[] {
  return buildPiContext(b.entries).map((c) => c.message);
}

function persist(b: SessionBuilder, entries: readonly PersistEntry[]): void {
  for (const e of entries) {
    if (e.kind === "custom") b.custom(e.customType, e.data);
    else b.customMessage(e.customType, e.content, e.details);
  }
}

/**
 * One chain: a prompt, tool turns (each flushed like the live pruner does on the final reply when
 * `flush` is set), then a final reply.
 */
async function chain(b: SessionBuilder, index: PruneIndex, prompt: string, turns: CallSpec[][], options: { thinking?: boolean; flush?: boolean; final?: string } = {}) {
  b.user(prompt);
  const batches = [];
  for (const turn of turns) {
    b.assistant({ thinking: options.thinking ? `thinking about ${prompt}` : undefined, toolCalls: turn.map((c) => ({ name: c.name, args: c.args ?? {}, id: c.id })) });
    const ids = b.lastToolCallIds;
    turn.forEach((c, i) => b.toolResult(ids[i]!, c.name, c.result, { isError: c.isError }));
    const messages = context(b);
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

function blocks(messages: AgentMessage[]): string[] {
  return messages.filter((m) => m.role === "custom" && m.customType === "context-prune-chain").map((m) => contentText((m as CustomMessage).content));
}

function freshIndex(b: SessionBuilder): PruneIndex {
  return rebuildIndex(b.entries).index;
}

describe("chain detection", () => {
  it("finds closed chains by their boundary timestamps; the open chain and tool-less exchanges are not chains", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(b, index, "one", [[{ name: "read", args: { path: "a.ts" }, result: "A" }]], { flush: false });
    b.user("just chatting").assistant("sure");
    await chain(b, index, "two", [[{ name: "bash", args: { command: "ls" }, result: "x" }], [{ name: "read", args: { path: "b.ts" }, result: "B" }]], { flush: false });
    b.user("open").assistant({ toolCalls: [{ name: "read", args: { path: "c.ts" } }] }).toolResult(b.lastToolCallIds[0]!, "read", "C");
    const messages = context(b);
    const chains = detectClosedChains(messages);
    expect(chains.map((c) => [messages[c.start]!.role, contentText((messages[c.start] as { content: string }).content), c.toolTurns, c.calls.length])).toEqual([
      ["user", "one", 1, 1],
      ["user", "two", 2, 2],
    ]);
    for (const c of chains) {
      expect(messages[c.start]!.timestamp).toBe(c.startUserTimestamp);
      expect(messages[c.end]!.timestamp).toBe(c.finalAssistantTimestamp);
    }
  });

  it("a steering user message starts a new chain, and a failed reply does not close one", () => {
    const b = new SessionBuilder().user("first").toolUse("read", { path: "a" }, "A");
    b.user("steer: use b instead").toolUse("read", { path: "b" }, "B");
    b.assistant({ text: "", stopReason: "error" }).assistant("finished");
    const messages = context(b);
    const chains = detectClosedChains(messages);
    expect(chains).toHaveLength(1);
    expect(contentText((messages[chains[0]!.start] as { content: string }).content)).toBe("steer: use b instead");
    expect(messages[chains[0]!.end]).toMatchObject({ role: "assistant", content: [{ type: "text", text: "finished" }] });
  });

  it("a chain whose start timestamp is shared by another user message is not offered for compression", () => {
    const b = new SessionBuilder().user("a").toolUse("read", { path: "a" }, "A").assistant("done");
    const messages = context(b);
    const twin = { ...messages[0]! };
    expect(detectClosedChains([twin, ...messages])).toHaveLength(0);
  });
});

describe("compression planning", () => {
  async function sixChains() {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    for (let n = 1; n <= 6; n++) await chain(b, index, `chain ${n}`, [[{ name: "read", args: { path: `src/${n}.ts` }, result: big(`file ${n}`) }]]);
    return { b, index };
  }

  it("with K=3 the chains beyond the three newest are planned, oldest first, with monotonic block ids", async () => {
    const { b, index } = await sixChains();
    const plans = planChainCompression(context(b), index, config, { now: 1 });
    expect(plans.map((p) => [p.data.blockId, p.data.toolRefs])).toEqual([
      ["b1", ["t1"]],
      ["b2", ["t2"]],
      ["b3", ["t3"]],
    ]);
  });

  it("chains already compressed are not planned again; /pruner compact (all) takes every remaining closed chain", async () => {
    const { b, index } = await sixChains();
    const first = await compressChains(context(b), index, config, echoSummarizer, { now: 1 });
    persist(b, first.entries);
    expect(first.chains).toHaveLength(3);
    expect(planChainCompression(context(b), index, config)).toEqual([]);
    const all = await compressChains(context(b), index, config, echoSummarizer, { all: true, now: 2 });
    expect(all.chains.map((c) => c.blockId)).toEqual(["b4", "b5", "b6"]);
    // A rebuild from the session continues the numbering.
    persist(b, all.entries);
    expect(freshIndex(b).lastBlockNumber).toBe(6);
  });

  it("a chain with two batch summaries gets one fused range summary; one summary needs no fusion call", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(b, index, "two batches", [[{ name: "read", args: { path: "a.ts" }, result: big("A") }], [{ name: "read", args: { path: "b.ts" }, result: big("B") }]]);
    await chain(b, index, "one batch", [[{ name: "read", args: { path: "c.ts" }, result: big("C") }]]);
    let calls = 0;
    const counting: Summarizer = async (r) => (calls++, echoSummarizer(r));
    const result = await compressChains(context(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, counting, { now: 1 });
    expect(calls).toBe(1);
    expect(result.rangesSummarized).toBe(1);
    expect(result.chains[0]).toMatchObject({ blockId: "b1", bodySource: "range-summary", rangeSummaryText: "- fused: `t1` `t2` belong together" });
    expect(result.chains[1]).toMatchObject({ blockId: "b2", bodySource: "batch-summaries" });
    expect(result.chains[1]!.rangeSummaryText).toBeUndefined();
    expect(result.usage).toEqual({ input: 50, output: 10, cost: 0.0005 });
  });

  it("a failed fusion still compresses the chain, with its batch summaries as the body", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(b, index, "two batches", [[{ name: "read", args: { path: "a.ts" }, result: big("A") }], [{ name: "read", args: { path: "b.ts" }, result: big("B") }]]);
    const failing: Summarizer = async () => {
      throw new Error("HTTP 503");
    };
    const result = await compressChains(context(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, failing);
    expect(result.fusionFailures).toEqual(["HTTP 503"]);
    expect(result.chains[0]).toMatchObject({ bodySource: "batch-summaries" });
    persist(b, result.entries);
    const [block] = blocks(renderModelView(context(b), freshIndex(b), config).messages);
    expect(block).toContain("`t1` read output, summarized");
    expect(block).toContain("`t2` read output, summarized");
  });

  it("calls no summary covers are indexed at compression so context_tree_query can recover them", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(b, index, "tiny", [[{ name: "bash", args: { command: "echo hi" }, result: "hi" }]]);
    expect(index.calls.size).toBe(0); // trivial batch: skipped, never indexed
    const result = await compressChains(context(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, echoSummarizer);
    expect(result.entries.map((e) => e.customType)).toEqual(["context-prune-index", "context-prune-chain"]);
    expect(result.chains[0]).toMatchObject({ toolRefs: ["t1"], bodySource: "call-list" });
    persist(b, result.entries);
    const rebuilt = freshIndex(b);
    expect(rebuilt.byShortRef.get("t1")?.record).toMatchObject({ toolName: "bash", resultText: "hi", args: { command: "echo hi" } });
    const [block] = blocks(renderModelView(context(b), rebuilt, config).messages);
    expect(block).toBe('<compressed-chain id="b1" tools="t1">\n- `t1` bash echo hi\n</compressed-chain>');
  });
});

describe("chain range prune", () => {
  async function compressedSession(options: { thinking?: boolean } = {}) {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(
      b,
      index,
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
    for (let n = 2; n <= 4; n++) await chain(b, index, `chain ${n}`, [[{ name: "read", args: { path: `src/${n}.ts` }, result: big(`file ${n}`) }]], options);
    const result = await compressChains(context(b), index, config, echoSummarizer, { now: 1 });
    persist(b, result.entries);
    return b;
  }

  it("the oldest chain becomes start message + one block + final reply; middle turns, results and its summary are gone", async () => {
    const b = await compressedSession();
    const input = context(b);
    const out = renderModelView(input, freshIndex(b), config).messages;
    const firstBlock = out.findIndex((m) => m.role === "custom" && m.customType === "context-prune-chain");
    expect(out[firstBlock - 1]).toMatchObject({ role: "user", content: "one" });
    expect(out[firstBlock + 1]).toMatchObject({ role: "assistant", content: [{ type: "text", text: "one: done" }] });
    expect(out.slice(0, firstBlock + 2).filter((m) => m.role === "toolResult" || (m.role === "assistant" && m.content.some((c) => c.type === "toolCall")))).toEqual([]);
    // The chain's batch summary is suppressed; the other chains' summaries stay.
    const summaries = out.filter((m) => m.role === "custom" && m.customType === "context-prune-summary").map((m) => contentText((m as CustomMessage).content));
    expect(summaries.some((s) => s.includes("`t1`"))).toBe(false);
    expect(summaries).toHaveLength(3);
    expect(blocks(out)[0]).toBe(
      [
        '<compressed-chain id="b1" tools="t1">',
        "- `t1` read output, summarized\n\nPruned refs: `t1`. The full outputs are kept: call context_tree_query with these refs to read them.",
        '<protected-output tool="read"># Release\n1. run the gate</protected-output>',
        '<protected-output tool="todo">- [ ] ship it</protected-output>',
        "</compressed-chain>",
      ].join("\n"),
    );
    // The input is not mutated.
    expect(input.some((m) => m.role === "toolResult" && contentText(m.content).startsWith("# Release"))).toBe(true);
  });

  it("the final reply of a compressed chain loses its thinking (all of it), newer chains keep theirs", async () => {
    const b = await compressedSession({ thinking: true });
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    const finals = out.filter((m): m is AssistantMessage => m.role === "assistant" && !m.content.some((c) => c.type === "toolCall"));
    expect(finals.map((m) => m.content.map((c) => c.type).join("+"))).toEqual(["text", "thinking+text", "thinking+text", "thinking+text"]);
    const keep = renderModelView(context(b), freshIndex(b), { ...config, chainCompression: { ...config.chainCompression, stripFinalAssistantThinking: false } }).messages;
    expect(keep.filter((m) => m.role === "assistant")[0]!.content.map((c) => c.type)).toEqual(["thinking", "text"]);
  });

  it("rendering twice gives the same bytes, and a rebuild from the session renders identically", async () => {
    const b = await compressedSession({ thinking: true });
    const first = JSON.stringify(renderModelView(context(b), freshIndex(b), config).messages);
    expect(JSON.stringify(renderModelView(context(b), freshIndex(b), config).messages)).toBe(first);
    expect(JSON.stringify(renderModelView(structuredClone(context(b)), rebuildIndex(structuredClone(b.entries)).index, config).messages)).toBe(first);
  });

  it("a reused tool-call id in a later, live turn is never dropped with the compressed chain", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(b, index, "old", [[{ name: "read", args: { path: "a.ts" }, result: big("old A"), id: "call_0" }]]);
    const result = await compressChains(context(b), index, { ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } }, echoSummarizer);
    persist(b, result.entries);
    b.user("live").assistant({ toolCalls: [{ name: "read", args: { path: "b.ts" }, id: "call_0" }] }).toolResult("call_0", "read", "live B");
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    const tail = out.slice(-3);
    expect(tail[0]).toMatchObject({ role: "user", content: "live" });
    expect(tail[1]).toMatchObject({ role: "assistant", content: [{ type: "toolCall", id: "call_0" }] });
    expect(tail[2]).toMatchObject({ role: "toolResult", toolCallId: "call_0", content: [{ type: "text", text: "live B" }] });
    expect(out.filter((m) => m.role === "toolResult")).toHaveLength(1);
  });

  it("a chain whose start was compacted away is left alone and reported as absent; a damaged range as unresolved", async () => {
    const b = await compressedSession();
    const index = freshIndex(b);
    const messages = context(b);
    // Pi's compaction removed the first chain: its messages are gone from the context.
    const compacted = messages.slice(messages.findIndex((m) => m.role === "user" && m.content === "chain 2"));
    const out = renderModelView(compacted, index, config);
    expect(out.stats.unresolvedChains).toEqual([expect.objectContaining({ blockId: "b1", absent: true })]);
    expect(blocks(out.messages)).toEqual([]);
    // Only the final reply left: a range that cannot be found is not touched.
    const finalOnly = messages.filter((m) => !(m.role === "user" && m.content === "one"));
    const partial = renderModelView(finalOnly, index, config);
    expect(partial.stats.unresolvedChains).toEqual([expect.objectContaining({ blockId: "b1", absent: false })]);
    expect(partial.messages.filter((m) => m.role === "toolResult").length).toBeGreaterThan(0);
  });

  it("an entry whose start timestamp names two user messages is left alone and reported", async () => {
    const b = await compressedSession();
    const messages = context(b);
    const start = messages.find((m) => m.role === "user" && m.content === "one")!;
    const twin = { role: "user" as const, content: "a later prompt with the same clock reading", timestamp: start.timestamp };
    const out = renderModelView([...messages, twin], freshIndex(b), config);
    expect(out.stats.unresolvedChains).toEqual([expect.objectContaining({ blockId: "b1", absent: false, reason: expect.stringContaining("more than one user message") })]);
    expect(out.messages.filter((m) => m.role === "toolResult").length).toBeGreaterThan(0);
  });

  it("an entry without a final timestamp (older writers) ends at the first text-only reply", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await chain(b, index, "old style", [[{ name: "read", args: { path: "a.ts" }, result: big("A") }]]);
    const start = context(b)[0]!.timestamp;
    b.custom("context-prune-chain", { blockId: "b1", startUserTimestamp: start, droppedToolCallIds: ["call_1"] } satisfies ChainData);
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    expect(out.map((m) => m.role)).toEqual(["user", "custom", "assistant"]);
    expect(blocks(out)[0]).toContain('tools="t1"');
  });

  it("two entries for the same start: the first wins; chainCompression.enabled false shows the chain raw again", async () => {
    const b = await compressedSession();
    const first = (b.entries.find((e) => e.type === "custom" && (e as { customType: string }).customType === "context-prune-chain") as { data: ChainData }).data;
    b.custom("context-prune-chain", { ...first, blockId: "b9" });
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    expect(blocks(out).map((t) => /id="(b\d+)"/.exec(t)![1])).toEqual(["b1"]);
    const off = renderModelView(context(b), freshIndex(b), { ...config, chainCompression: { ...config.chainCompression, enabled: false } }).messages;
    expect(blocks(off)).toEqual([]);
  });
});

describe("error purge", () => {
  const body = "y".repeat(800);
  function failedWrite() {
    return new SessionBuilder().user("write it").toolUse("write", { path: "a.ts", content: body }, "Error: EACCES", { isError: true });
  }

  it("a failed call's large arguments become a size stub after the cooldown; the error result stays", () => {
    const b = failedWrite().assistant("retrying").user("go on").assistant("ok");
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    const call = (out[1] as AssistantMessage).content[0]!;
    const size = JSON.stringify({ path: "a.ts", content: body }).length;
    expect(call).toMatchObject({ type: "toolCall", name: "write", arguments: { _purged: `<purged-errored-args size="${size}"/>` } });
    expect(out[2]).toMatchObject({ role: "toolResult", isError: true, content: [{ type: "text", text: "Error: EACCES" }] });
  });

  it("within the cooldown, below minArgChars, or for a call that succeeded, arguments stay", () => {
    const recent = failedWrite().assistant("retrying");
    const input = context(recent);
    expect(renderModelView(input, freshIndex(recent), config).messages).toBe(input);
    const small = new SessionBuilder().user("w").toolUse("write", { path: "a.ts" }, "Error", { isError: true }).assistant("a").assistant("b");
    const smallInput = context(small);
    expect(renderModelView(smallInput, freshIndex(small), config).messages).toBe(smallInput);
    const ok = new SessionBuilder().user("w").toolUse("write", { path: "a.ts", content: body }, "written").assistant("a").assistant("b");
    const okInput = context(ok);
    expect(renderModelView(okInput, freshIndex(ok), config).messages).toBe(okInput);
  });
});

describe("orphan sweep", () => {
  it("a result displaced by a custom message is moved back to its turn; a stray result is dropped", () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a" } }, { name: "read", args: { path: "b" } }] });
    b.toolResult("call_1", "read", "A").customMessage("notice", "file changed on disk").toolResult("call_2", "read", "B");
    b.toolResult("call_9", "read", "stray");
    const out = renderModelView(context(b), freshIndex(b), config);
    expect(out.messages.map((m) => (m.role === "toolResult" ? `result ${m.toolCallId}` : m.role))).toEqual(["user", "assistant", "result call_1", "result call_2", "custom"]);
    expect(out.stats).toMatchObject({ resultsReattached: 1, orphansDropped: 1 });
  });

  it("a call whose result never came gets an error result, and a duplicate result is dropped", () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a" } }, { name: "read", args: { path: "b" } }] });
    b.toolResult("call_1", "read", "A").toolResult("call_1", "read", "A again").user("next");
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    expect(out.slice(2, 4)).toEqual([
      expect.objectContaining({ toolCallId: "call_1", content: [{ type: "text", text: "A" }] }),
      expect.objectContaining({ toolCallId: "call_2", isError: true, content: [{ type: "text", text: "[No result for this call is in the context.]" }] }),
    ]);
    expect(out[4]).toMatchObject({ role: "user" });
  });

  it("results of an aborted turn are dropped: Pi never replays that turn", () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "bash", args: { command: "sleep 9" } }], stopReason: "aborted" });
    b.toolResult("call_1", "bash", "aborted").user("again");
    const out = renderModelView(context(b), freshIndex(b), config).messages;
    expect(out.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });
});

describe("thinking strip", () => {
  function thinkingSession(turns: number) {
    const b = new SessionBuilder().user("go");
    for (let i = 0; i < turns; i++) b.assistant({ thinking: `t${i}`, toolCalls: [{ name: "bash", args: { command: `step ${i}` } }] }).toolResult(b.lastToolCallIds[0]!, "bash", "ok");
    return b;
  }

  it("is off by default", () => {
    const b = thinkingSession(20);
    const input = context(b);
    expect(DEFAULT_CONFIG.thinkingStrip.enabled).toBe(false);
    expect(renderModelView(input, freshIndex(b), config).messages).toBe(input);
  });

  it("turned on, keeps thinking on the newest keepLastTurns assistant turns and drops it whole from older ones", () => {
    const b = thinkingSession(5);
    const out = renderModelView(context(b), freshIndex(b), { ...config, thinkingStrip: { enabled: true, keepLastTurns: 2 } }).messages;
    const kinds = out.filter((m): m is AssistantMessage => m.role === "assistant").map((m) => m.content.map((c) => c.type).join("+"));
    expect(kinds).toEqual(["toolCall", "toolCall", "toolCall", "thinking+toolCall", "thinking+toolCall"]);
  });

  it("never strips the newest turn, even with keepLastTurns 0", () => {
    const b = thinkingSession(2);
    const out = renderModelView(context(b), freshIndex(b), { ...config, thinkingStrip: { enabled: true, keepLastTurns: 0 } }).messages;
    expect((out.filter((m) => m.role === "assistant").at(-1) as AssistantMessage).content[0]!.type).toBe("thinking");
  });
});
