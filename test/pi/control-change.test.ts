// Where a rewind, shrink or cancel first changes what is sent: the flush policy prices a rewrite
// of history from there, so a flush landing in the same request is not charged for it twice.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { readControls } from "../../core/src/control/read-controls.ts";
import { CONTROL_SCHEMA, EMPTY_CONTROLS, SHRINK_ENTRY, CANCEL_ENTRY } from "../../core/src/control/control-entries.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { controlChangeIn, contextMessagesOf } from "../../pi-extension/src/branch-context.ts";

function session() {
  const b = new SessionBuilder().system("You are a coding agent.").user("look around");
  b.toolUse("read", { path: "a.ts" }, "a".repeat(2000));
  b.toolUse("read", { path: "b.ts" }, "b".repeat(2000));
  b.assistant("done").user("next");
  b.toolUse("bash", { command: "ls" }, "a.ts b.ts");
  return b;
}

describe("controlChangeIn", () => {
  it("is the position of the first message a new shrink replaces, and the end when nothing changed", () => {
    const b = session();
    const sent = contextMessagesOf(b.entries);
    const before = readControls(b.entries);
    expect(controlChangeIn(sent, before, before)).toBe(sent.length);
    const bRead = buildPiContext(b.entries).find((c) => c.message.role === "toolResult" && JSON.stringify(c.message.content).includes("bbbb"))!;
    b.custom(SHRINK_ENTRY, { schema: CONTROL_SCHEMA, v: 1, kind: "shrink", id: "s1", target: { by_content_includes: "bbbb" }, replacement: "b.ts: 2000 b's", pinnedEntryId: bRead.entryId, seq: 1, ts: 1 });
    const after = readControls(b.entries);
    const at = sent.findIndex((m) => m === bRead.message);
    expect(at).toBeGreaterThan(0);
    expect(controlChangeIn(sent, EMPTY_CONTROLS, after)).toBe(at);
  });

  it("a cancel changes what is sent from where the shrunk message comes back", () => {
    const b = session();
    const bRead = buildPiContext(b.entries).find((c) => c.message.role === "toolResult" && JSON.stringify(c.message.content).includes("bbbb"))!;
    b.custom(SHRINK_ENTRY, { schema: CONTROL_SCHEMA, v: 1, kind: "shrink", id: "s1", target: { by_content_includes: "bbbb" }, replacement: "short", pinnedEntryId: bRead.entryId, seq: 1, ts: 1 });
    const shrunk = readControls(b.entries);
    const sent = contextMessagesOf(b.entries, shrunk);
    b.custom(CANCEL_ENTRY, { schema: CONTROL_SCHEMA, v: 1, kind: "cancel", targetId: "s1", seq: 2, ts: 2 });
    const cancelled = readControls(b.entries);
    const at = sent.findIndex((m) => m.timestamp === bRead.message.timestamp && m.role === "toolResult");
    expect(at).toBeGreaterThan(0);
    expect(controlChangeIn(sent, shrunk, cancelled)).toBe(at);
  });
});
