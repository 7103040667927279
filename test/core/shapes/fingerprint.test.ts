// A message's fingerprint: what survives the deep copy Pi hands over on every request.
import { describe, expect, it } from "vitest";
import { messageFingerprint } from "../../../core/src/shapes/fingerprint.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

const result: AgentMessage = { role: "toolResult", toolCallId: "call_1", toolName: "read", content: [{ type: "text", text: "contents" }], isError: false, timestamp: 1_700_000_000_123 };

describe("messageFingerprint", () => {
  it("is the same for a message and a deep copy of it", () => {
    expect(messageFingerprint(structuredClone(result))).toBe(messageFingerprint(result));
    const reply: AgentMessage = { role: "assistant", content: [{ type: "thinking", thinking: "why" }, { type: "text", text: "done" }], timestamp: 7 };
    expect(messageFingerprint(structuredClone(reply))).toBe(messageFingerprint(reply));
  });

  it("tells apart messages that differ in role, timestamp, call id or content shape", () => {
    const variants: AgentMessage[] = [
      { ...result, timestamp: result.timestamp + 1 },
      { ...result, timestamp: result.timestamp + 2 ** 32 },
      { ...result, toolCallId: "call_2" },
      { ...result, content: [{ type: "text", text: "content" }] },
      { ...result, content: [{ type: "text", text: "contents" }, { type: "text", text: "more" }] },
      { role: "user", content: [{ type: "text", text: "contents" }], timestamp: result.timestamp },
    ];
    const prints = new Set([result, ...variants].map(messageFingerprint));
    expect(prints.size).toBe(variants.length + 1);
  });

  it("is a safe integer, also for messages with fields a file got wrong", () => {
    const odd = [{ ...result, timestamp: Number.NaN }, { ...result, timestamp: "yesterday" }, { ...result, content: null }, { ...result, content: "text" }, { ...result, toolCallId: 5 }] as unknown as AgentMessage[];
    for (const message of [result, ...odd]) expect(Number.isSafeInteger(messageFingerprint(message))).toBe(true);
    expect(new Set(odd.map(messageFingerprint)).size).toBe(odd.length);
  });
});
