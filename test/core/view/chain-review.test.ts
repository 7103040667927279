import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import type { ChainData } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";
import { buildModelView, type ModelView } from "../../../core/src/view/model-view.ts";
import { buildSessionView, type ChainView } from "../../../core/src/view/session-view.ts";
import { buildChainReview, type ChainReview, type ChainReviewSpans } from "../../../core/src/view/chain-review.ts";

const config = DEFAULT_CONFIG;

function timestampOf(b: SessionBuilder, entryId: string): number {
  return (b.entry(entryId) as unknown as { message: { timestamp: number } }).message.timestamp;
}

/**
 * A chain (prompt, two tool turns, a final reply), then a foreign notice and one more reply before
 * the next prompt: a chain entry without a final timestamp must end at the first reply, not there.
 */
function chainSession(options: { finalTimestamp: boolean }): { b: SessionBuilder; startId: string } {
  const b = new SessionBuilder();
  b.user("fix the parser");
  const startId = b.lastId;
  b.toolUse("read", { path: "src/parser.ts" }, "export function parse() {}\n".repeat(40));
  b.toolUse("bash", { command: "npm test" }, "FAIL parser.test.ts\n".repeat(40));
  b.assistant("The parser is fixed.");
  const finalId = b.lastId;
  b.customMessage("file-watch", "src/parser.ts changed on disk");
  b.assistant("Noted the change on disk.");
  const chain: ChainData = { blockId: "b1", startUserTimestamp: timestampOf(b, startId), droppedToolCallIds: ["call_1", "call_2"], toolRefs: [] };
  if (options.finalTimestamp) chain.finalAssistantTimestamp = timestampOf(b, finalId);
  b.custom("context-prune-chain", chain);
  b.user("now add a test");
  b.toolUse("write", { path: "test/parser.test.ts", content: "it('parses', () => {});\n" }, "Wrote test/parser.test.ts");
  b.assistant("Added the test.");
  return { b, startId };
}

function viewsOf(b: SessionBuilder): { model: ModelView; chain: ChainView } {
  const data = parseSessionText(b.toJsonl());
  const chain = buildSessionView(data, { config }).chains[0]!;
  return { model: buildModelView(data, { config }), chain };
}

const text = (m: AgentMessage) => (m.role === "user" || m.role === "custom" ? contentText(m.content) : m.role === "assistant" ? m.content.map((c) => (c.type === "text" ? c.text : "")).join("") : "");

/** Restated without core's resolver: the render's block, and the user message and final reply around it. */
function renderedSpan(messages: readonly AgentMessage[], blockId: string): { start: AgentMessage; block: AgentMessage; final: AgentMessage } | undefined {
  const block = messages.findIndex((m) => m.role === "custom" && text(m).startsWith(`<compressed-chain id="${blockId}"`));
  if (block < 0) return undefined;
  const final = messages.slice(block + 1).find((m) => m.role === "assistant")!;
  return { start: messages[block - 1]!, block: messages[block]!, final };
}

function compressedSpans(review: ChainReview): Extract<ChainReviewSpans, { kind: "compressed" }> {
  expect(review.spans.kind).toBe("compressed");
  return review.spans as Extract<ChainReviewSpans, { kind: "compressed" }>;
}

describe("chain review", () => {
  it("a chain entry without a final timestamp: the review shows the range the render compressed, ending at the first reply", () => {
    const { b } = chainSession({ finalTimestamp: false });
    const { model, chain } = viewsOf(b);
    const rendered = renderedSpan(model.messages, "b1");
    expect(rendered, "the render compressed the chain").toBeDefined();
    expect(text(rendered!.start)).toBe("fix the parser");
    expect(text(rendered!.final)).toBe("The parser is fixed.");

    const review = buildChainReview(model, chain);
    const spans = compressedSpans(review);
    // Raw side: from the render's start message to its final reply, nothing past it.
    const raw = model.rawMessages.slice(spans.raw.start, spans.raw.end + 1);
    expect(raw[0]!.timestamp).toBe(rendered!.start.timestamp);
    expect(raw[raw.length - 1]!.timestamp).toBe(rendered!.final.timestamp);
    expect(raw.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]);
    // Sent side: exactly the start message, the block and the final reply the render wrote.
    expect(model.messages.slice(spans.sent.start, spans.sent.end + 1)).toEqual([rendered!.start, rendered!.block, rendered!.final]);

    expect(review.original).toMatch(/^# Chain b1: the original span \(6 messages, [\d,]+ characters\)/);
    expect(review.original).toMatch(/The parser is fixed\./);
    expect(review.original).not.toMatch(/changed on disk|Noted the change/);
    expect(review.compressed).toMatch(/^# Chain b1: what the model is sent \(3 messages, [\d,]+ characters\)/);
    expect(review.compressed).toContain('<compressed-chain id="b1"');
    expect(review.compressed).not.toMatch(/changed on disk|Noted the change|FAIL parser\.test\.ts/);
  });

  it("a chain entry with its final timestamp: the same span on both sides as the render's", () => {
    const { b } = chainSession({ finalTimestamp: true });
    const { model, chain } = viewsOf(b);
    const rendered = renderedSpan(model.messages, "b1")!;
    const review = buildChainReview(model, chain);
    const spans = compressedSpans(review);
    expect(model.rawMessages[spans.raw.start]!.timestamp).toBe(rendered.start.timestamp);
    expect(model.rawMessages[spans.raw.end]!.timestamp).toBe(rendered.final.timestamp);
    expect(model.messages.slice(spans.sent.start, spans.sent.end + 1)).toEqual([rendered.start, rendered.block, rendered.final]);
  });

  it("two user messages share the chain's start timestamp: nothing is compressed, and the review says why instead of showing a span", () => {
    const { b, startId } = chainSession({ finalTimestamp: true });
    b.raw({ type: "message", message: { role: "user", content: "a prompt with the same clock reading", timestamp: timestampOf(b, startId) } });
    const { model, chain } = viewsOf(b);
    expect(renderedSpan(model.messages, "b1"), "the render leaves the chain raw").toBeUndefined();
    expect(model.messages.filter((m) => m.role === "toolResult")).toHaveLength(3);

    const review = buildChainReview(model, chain);
    expect(review.spans).toEqual({ kind: "unresolved", reason: "more than one user message has its start timestamp", absent: false });
    expect(review.original).toBe("# Chain b1: the chain cannot be found in this branch's context: more than one user message has its start timestamp.\n");
    expect(review.compressed).toMatch(/^# Chain b1: not compressed: more than one user message has its start timestamp/);
    for (const side of [review.original, review.compressed]) expect(side).not.toMatch(/fix the parser|The parser is fixed|── \d+\./);
  });

  it("a chain Pi's compaction removed: the review says it is gone, and nothing is shown as compressed", () => {
    const { b } = chainSession({ finalTimestamp: true });
    const kept = b.entries.find((e) => e.type === "message" && JSON.stringify(e).includes("now add a test"))!.id;
    b.compaction({ firstKeptEntryId: kept, summary: "The parser was fixed." });
    b.user("and the docs");
    b.assistant("Docs updated.");
    const { model, chain } = viewsOf(b);
    expect(model.rawMessages.some((m) => m.role === "user" && m.content === "fix the parser")).toBe(false);
    expect(renderedSpan(model.messages, "b1")).toBeUndefined();

    const review = buildChainReview(model, chain);
    expect(review.spans).toMatchObject({ kind: "unresolved", absent: true });
    expect(review.original).toMatch(/^# Chain b1: a Pi compaction removed this chain/);
    expect(review.compressed).toMatch(/^# Chain b1: not compressed: its messages are gone from the context/);
    for (const side of [review.original, review.compressed]) expect(side).not.toMatch(/what the model is sent \(|the original span \(|── \d+\./);
  });
});
