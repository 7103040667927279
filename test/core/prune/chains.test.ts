// Closed chains: how they are found in the context Pi builds (detectClosedChains), and how a
// persisted chain entry is found again by position (resolveChain, seen through the render).
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, chainBlocks, compressedSession, freshIndex, piContext, playChain } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { detectClosedChains } from "../../../core/src/prune/chains.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";
import type { ChainData } from "../../../core/src/shapes/entries.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"] };

describe("chain detection", () => {
  it("finds closed chains by their boundary timestamps; the open chain and tool-less exchanges are not chains", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await playChain(b, index, config, "one", [[{ name: "read", args: { path: "a.ts" }, result: "A" }]], { flush: false });
    b.user("just chatting").assistant("sure");
    await playChain(b, index, config, "two", [[{ name: "bash", args: { command: "ls" }, result: "x" }], [{ name: "read", args: { path: "b.ts" }, result: "B" }]], { flush: false });
    b.user("open").assistant({ toolCalls: [{ name: "read", args: { path: "c.ts" } }] }).toolResult(b.lastToolCallIds[0]!, "read", "C");
    const messages = piContext(b);
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
    const messages = piContext(b);
    const chains = detectClosedChains(messages);
    expect(chains).toHaveLength(1);
    expect(contentText((messages[chains[0]!.start] as { content: string }).content)).toBe("steer: use b instead");
    expect(messages[chains[0]!.end]).toMatchObject({ role: "assistant", content: [{ type: "text", text: "finished" }] });
  });

  it("a chain whose start timestamp is shared by another user message is not offered for compression", () => {
    const b = new SessionBuilder().user("a").toolUse("read", { path: "a" }, "A").assistant("done");
    const messages = piContext(b);
    const twin = { ...messages[0]! };
    expect(detectClosedChains([twin, ...messages])).toHaveLength(0);
  });
});

describe("chain resolution", () => {
  it("a chain whose start was compacted away is left alone and reported as absent; a damaged range as unresolved", async () => {
    const b = await compressedSession(config);
    const index = freshIndex(b);
    const messages = piContext(b);
    // Pi's compaction removed the first chain: its messages are gone from the context.
    const compacted = messages.slice(messages.findIndex((m) => m.role === "user" && m.content === "chain 2"));
    const out = renderModelView(compacted, index, config);
    expect(out.stats.unresolvedChains).toEqual([expect.objectContaining({ blockId: "b1", absent: true })]);
    expect(chainBlocks(out.messages)).toEqual([]);
    // Only the final reply left: a range that cannot be found is not touched.
    const finalOnly = messages.filter((m) => !(m.role === "user" && m.content === "one"));
    const partial = renderModelView(finalOnly, index, config);
    expect(partial.stats.unresolvedChains).toEqual([expect.objectContaining({ blockId: "b1", absent: false })]);
    expect(partial.messages.filter((m) => m.role === "toolResult").length).toBeGreaterThan(0);
  });

  it("an entry whose start timestamp names two user messages is left alone and reported", async () => {
    const b = await compressedSession(config);
    const messages = piContext(b);
    const start = messages.find((m) => m.role === "user" && m.content === "one")!;
    const twin = { role: "user" as const, content: "a later prompt with the same clock reading", timestamp: start.timestamp };
    const out = renderModelView([...messages, twin], freshIndex(b), config);
    expect(out.stats.unresolvedChains).toEqual([expect.objectContaining({ blockId: "b1", absent: false, reason: expect.stringContaining("more than one user message") })]);
    expect(out.messages.filter((m) => m.role === "toolResult").length).toBeGreaterThan(0);
  });

  it("an entry without a final timestamp (older writers) ends at the first text-only reply", async () => {
    const b = new SessionBuilder();
    const index = freshIndex(b);
    await playChain(b, index, config, "old style", [[{ name: "read", args: { path: "a.ts" }, result: big("A") }]]);
    const start = piContext(b)[0]!.timestamp;
    b.custom("context-prune-chain", { blockId: "b1", startUserTimestamp: start, droppedToolCallIds: ["call_1"] } satisfies ChainData);
    const out = renderModelView(piContext(b), freshIndex(b), config).messages;
    expect(out.map((m) => m.role)).toEqual(["user", "custom", "assistant"]);
    expect(chainBlocks(out)[0]).toContain('tools="t1"');
  });
});
