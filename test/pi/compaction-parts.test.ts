// Which part of the rendered context Pi's compaction is sent: the messages Pi is about to summarize
// (and a split turn's prefix), as the render left them, taken by where their source messages were.
import { describe, expect, it } from "vitest";
import { renderedParts } from "../../pi-extension/src/compaction.ts";
import type { AgentMessage, AssistantMessage, CustomMessage, ToolResultMessage, UserMessage } from "../../core/src/shapes/messages.ts";

const user = (text: string, timestamp: number): UserMessage => ({ role: "user", content: text, timestamp });
const reads = (id: string, timestamp: number): AssistantMessage =>
  ({ role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: { path: `${id}.ts` } }], stopReason: "toolUse", timestamp }) as unknown as AssistantMessage;
const result = (id: string, text: string, timestamp: number): ToolResultMessage => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text }], isError: false, timestamp });
const reply = (text: string, timestamp: number): AssistantMessage => ({ role: "assistant", content: [{ type: "text", text }], stopReason: "stop", timestamp }) as unknown as AssistantMessage;
const summary = (timestamp: number): AgentMessage => ({ role: "compactionSummary", summary: "earlier", tokensBefore: 1, timestamp }) as unknown as AgentMessage;

/** A copy, as Pi's preparation holds them (never the context's own objects). */
const copies = (messages: AgentMessage[]) => structuredClone(messages);

// An earlier compaction's summary, two finished tasks, then the task Pi keeps.
const context: AgentMessage[] = [
  summary(100),
  user("task one", 1),
  reads("c1", 2),
  result("c1", "raw output one", 3),
  reply("one done", 4),
  user("task two", 5),
  reads("c2", 6),
  result("c2", "raw output two", 7),
  reply("two done", 8),
  user("task three", 9),
  reply("three done", 10),
];

describe("the part of the render Pi's compaction is sent", () => {
  it("a stubbed result replaces its raw output in the history; the earlier summary and the kept task are left out", () => {
    const stub = { ...(context[3] as ToolResultMessage), content: [{ type: "text" as const, text: "[stub t1]" }] };
    const rendered = context.map((m, i) => (i === 3 ? stub : m));
    const parts = renderedParts(context, rendered, { messagesToSummarize: copies(context.slice(1, 9)) as never, turnPrefixMessages: [] });
    expect(parts).not.toBe("mismatch");
    expect(parts).toBeDefined();
    const { history, turnPrefix } = parts as Exclude<typeof parts, "mismatch" | undefined>;
    expect(history).toEqual([...context.slice(1, 3), stub, ...context.slice(4, 9)]);
    expect(turnPrefix).toEqual([]);
  });

  it("a compressed chain, made at its first prompt's timestamp, belongs to the history; a split turn's prefix is taken apart", () => {
    const block: CustomMessage = { role: "custom", customType: "context-prune-chain", content: "<compressed-chain>", display: false, timestamp: 1 } as CustomMessage;
    const rendered = [context[0]!, block, ...context.slice(5)];
    const parts = renderedParts(context, rendered, { messagesToSummarize: copies(context.slice(1, 5)) as never, turnPrefixMessages: copies(context.slice(5, 7)) as never });
    const { history, turnPrefix } = parts as Exclude<typeof parts, "mismatch" | undefined>;
    expect(history).toEqual([block]);
    expect(turnPrefix).toEqual(context.slice(5, 7));
  });

  it("nothing to send differently when the render left the summarized part as it was", () => {
    const rendered = context.map((m, i) => (i === 10 ? reply("changed, but kept by Pi", 10) : m));
    expect(renderedParts(context, rendered, { messagesToSummarize: copies(context.slice(1, 9)) as never, turnPrefixMessages: [] })).toBeUndefined();
  });

  it("a message Pi would summarize that is not in the context is a mismatch, and so is a render out of order", () => {
    expect(renderedParts(context, context, { messagesToSummarize: [user("never sent", 42)] as never, turnPrefixMessages: [] })).toBe("mismatch");
    const swapped = [context[0]!, context[9]!, ...context.slice(1, 9), context[10]!];
    expect(renderedParts(context, swapped, { messagesToSummarize: copies(context.slice(1, 9)) as never, turnPrefixMessages: [] })).toBe("mismatch");
  });
});
