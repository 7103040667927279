// The whole render (renderModelView): its five steps in order — stubs, error purge, chain range
// prune, orphan sweep, thinking strip — and its promises: the same bytes every time, the very
// same array when nothing changes, and an input that is never changed. (Failing open is the
// caller's part: see the model view's tests.)
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, chainBlocks, compressedSession, echoSummarizer, freshIndex, lastBatch, persist, piContext, resultTexts, summarizedReads } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { emptyIndex, rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { createRenderMemo, renderModelView } from "../../../core/src/render/render.ts";
import { MISSING_RESULT_TEXT } from "../../../core/src/render/orphan-sweep.ts";
import type { AgentMessage, AssistantMessage, ToolCallBlock } from "../../../core/src/shapes/messages.ts";

// Each step's own turn counting, as the turns pass (cacheAware off); epochs.test.ts counts them by flushes.
const config: PruneConfig = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths], protectedTools: [], cacheAware: false };
const body = "y".repeat(800);

const toolCallsOf = (messages: readonly AgentMessage[], name: string): ToolCallBlock[] =>
  messages.flatMap((m) => (m.role === "assistant" ? m.content.filter((c): c is ToolCallBlock => c.type === "toolCall" && c.name === name) : []));

describe("render", () => {
  it("rendering twice gives the same bytes, and a rebuild from the session renders identically", async () => {
    const { b, index } = await summarizedReads(config);
    // The second request with the first one remembered, as live.
    const memo = createRenderMemo();
    const first = JSON.stringify(renderModelView(piContext(b), index, config, undefined, memo).messages);
    const second = JSON.stringify(renderModelView(piContext(b), index, config, undefined, memo).messages);
    const rebuilt = JSON.stringify(renderModelView(piContext(b), rebuildIndex(b.entries).index, config).messages);
    expect(second).toBe(first);
    expect(rebuilt).toBe(first);
  });

  it("what a render remembers is in the memo its caller holds, and nowhere else", async () => {
    const { b, index } = await summarizedReads(config);
    const mine = createRenderMemo();
    const other = createRenderMemo();
    const first = renderModelView(piContext(b), index, config, undefined, mine);
    expect(mine.last).toBeDefined();
    expect(other.last).toBeUndefined();
    // Another caller's memo knows nothing of it: its first request renders whole, to the same bytes.
    expect(JSON.stringify(renderModelView(piContext(b), index, config, undefined, other).messages)).toBe(JSON.stringify(first.messages));
    // Without a memo nothing is remembered, and the render is the whole one.
    const again = renderModelView(piContext(b), index, config);
    expect(JSON.stringify(again.messages)).toBe(JSON.stringify(first.messages));
    expect(again.stats).toEqual(first.stats);
  });

  it("nothing to prune gives back the very same array", () => {
    const b = new SessionBuilder().user("hi").toolUse("read", { path: "a" }, "x").assistant("ok");
    const input = piContext(b);
    expect(renderModelView(input, emptyIndex(), config).messages).toBe(input);
    expect(renderModelView(input, rebuildIndex(b.entries).index, config).messages).toBe(input);
  });

  it("turned off, the pruner sends everything raw", async () => {
    const { b, index } = await summarizedReads(config);
    const input = piContext(b);
    expect(renderModelView(input, index, { ...config, enabled: false }).messages).toBe(input);
  });

  it("with every step turned on and nothing for any of them to do, the very same array comes back", () => {
    const b = new SessionBuilder().user("write it").toolUse("write", { path: "a.ts" }, "Error: EACCES", { isError: true }).assistant("retrying").assistant("done");
    const input = piContext(b);
    const out = renderModelView(input, freshIndex(b), { ...config, thinkingStrip: { enabled: true, keepLastTurns: 1 } });
    expect(out.messages).toBe(input);
    expect(out.stats).toMatchObject({ stubbed: 0, purgedArgs: 0, chainsCompressed: 0, orphansDropped: 0, resultsReattached: 0, resultsSynthesized: 0, thinkingStripped: 0 });
  });

  it("every step acts in one render, each is counted, and the input stays as it was", async () => {
    const b = await compressedSession(config, { thinking: true });
    b.user("write it").toolUse("write", { path: "a.ts", content: body }, "Error: EACCES", { isError: true }).assistant("retrying");
    b.user("read both").assistant({ toolCalls: [{ name: "read", args: { path: "x.ts" } }, { name: "read", args: { path: "y.ts" } }] });
    const [x, y] = b.lastToolCallIds;
    b.toolResult(x!, "read", "X").customMessage("notice", "file changed on disk").toolResult(y!, "read", "Y");
    b.assistant({ thinking: "last thoughts", text: "both read" });
    const input = piContext(b);
    const before = JSON.stringify(input);
    const out = renderModelView(input, freshIndex(b), { ...config, thinkingStrip: { enabled: true, keepLastTurns: 1 } });

    expect(chainBlocks(out.messages)).toHaveLength(1);
    expect(resultTexts(out.messages).filter((t) => t.includes("pruned: see ref"))).toHaveLength(3);
    expect(toolCallsOf(out.messages, "write")[0]!.arguments).toEqual({ path: "a.ts", content: `${body.slice(0, 64)}…<purged-errored-args cut="${body.length - 64}"/>` });
    const tail = out.messages.slice(-5).map((m) => (m.role === "toolResult" ? `result ${m.toolCallId}` : m.role));
    expect(tail).toEqual(["assistant", `result ${x}`, `result ${y}`, "custom", "assistant"]);
    const withThinking = out.messages.filter((m): m is AssistantMessage => m.role === "assistant" && m.content.some((c) => c.type === "thinking"));
    expect(withThinking.map((m) => m.content.map((c) => (c.type === "text" ? c.text : c.type)))).toEqual([["thinking", "both read"]]);
    expect(out.stats).toMatchObject({ purgedArgs: 1, chainsCompressed: 1, resultsReattached: 1, thinkingStripped: 6 });

    // Only changed messages are copies: the untouched ones are the input's own objects.
    expect(out.messages[0]).toBe(input[0]);
    expect(JSON.stringify(input)).toBe(before);
  });

  it("a call whose result never came keeps its arguments: the error result the sweep adds is not a failure to purge", () => {
    const b = new SessionBuilder().user("write it").assistant({ toolCalls: [{ name: "write", args: { path: "a.ts", content: body } }] });
    b.user("hello?").assistant("a").assistant("b");
    const out = renderModelView(piContext(b), freshIndex(b), config);
    expect(toolCallsOf(out.messages, "write")[0]!.arguments).toEqual({ path: "a.ts", content: body });
    expect(out.messages[2]).toMatchObject({ role: "toolResult", isError: true, content: [{ type: "text", text: MISSING_RESULT_TEXT }] });
    expect(out.stats).toMatchObject({ purgedArgs: 0, resultsSynthesized: 1 });
  });

  it("a failed call whose error output was summarized: its stub is not an error, and its large arguments are still purged", async () => {
    const b = new SessionBuilder().user("write it").toolUse("write", { path: "a.ts", content: body }, `Error: EACCES\n${big("trace")}`, { isError: true });
    const index = emptyIndex();
    persist(b, (await flushBatches([lastBatch(b, config)], index, config, echoSummarizer)).entries);
    b.assistant("retrying").user("go on").assistant("ok");
    const out = renderModelView(piContext(b), freshIndex(b), config).messages;
    expect(out[2]).toMatchObject({ role: "toolResult", toolCallId: "call_1", isError: false });
    expect(resultTexts(out)[0]).toContain("`t1`");
    expect(toolCallsOf(out, "write")[0]!.arguments).toEqual({ path: "a.ts", content: `${body.slice(0, 64)}…<purged-errored-args cut="${body.length - 64}"/>` });
  });

  it("a config without the nested blocks renders as with the default chain, purge and thinking settings", async () => {
    const b = await compressedSession(config);
    b.user("write it").toolUse("write", { path: "a.ts", content: body }, "Error: EACCES", { isError: true }).assistant("retrying").user("go on").assistant("ok");
    const bare = { enabled: true, protectedTools: config.protectedTools, protectedPaths: config.protectedPaths, recoveryGraceTurns: config.recoveryGraceTurns, cacheAware: false };
    const out = renderModelView(piContext(b), freshIndex(b), bare);
    expect(out.stats).toMatchObject({ chainsCompressed: 1, purgedArgs: 1 });
    expect(JSON.stringify(out.messages)).toBe(JSON.stringify(renderModelView(piContext(b), freshIndex(b), { ...DEFAULT_CONFIG, cacheAware: false }).messages));
  });
});
