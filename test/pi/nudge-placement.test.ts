// Where a nudge rides a request: on the newest message when it can carry text the model reads as
// input, else as a message of its own. Pi's copy of the messages is never changed.
import { describe, expect, it } from "vitest";
import { NUDGE_MESSAGE, withNudge } from "../../pi-extension/src/self-control/live.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

const user: AgentMessage = { role: "user", content: "fix it", timestamp: 1 };
const assistant: AgentMessage = { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "bash", arguments: {} }], timestamp: 2 };
const result: AgentMessage = { role: "toolResult", toolCallId: "c1", toolName: "bash", content: [{ type: "text", text: "ok" }], isError: false, timestamp: 3 };

describe("nudge placement", () => {
  it("appends a text block to a newest tool result, leaving the original untouched", () => {
    const input = [user, assistant, result];
    const out = withNudge(input, "NOTE");
    expect(out).toHaveLength(3);
    expect(out[2]).toEqual({ ...result, content: [{ type: "text", text: "ok" }, { type: "text", text: "NOTE" }] });
    expect(result.content).toHaveLength(1);
    expect(out.slice(0, 2)).toEqual(input.slice(0, 2));
  });

  it("appends to a newest user message, turning string content into blocks", () => {
    const out = withNudge([user], "NOTE");
    expect(out[0]).toEqual({ ...user, content: [{ type: "text", text: "fix it" }, { type: "text", text: "NOTE" }] });
    expect(user.content).toBe("fix it");
  });

  it("after an assistant message it goes as a custom message of its own, so no call is parted from its result", () => {
    const out = withNudge([user, { role: "assistant", content: [{ type: "text", text: "done" }], timestamp: 2 }], "NOTE");
    expect(out).toHaveLength(3);
    expect(out[2]).toMatchObject({ role: "custom", customType: NUDGE_MESSAGE, content: "NOTE", display: false });
  });
});
