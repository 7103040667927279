import { describe, expect, it } from "vitest";
import { capForNotice, describeShrinkTarget, shrinkData, shrinkRefusal, shrinksOverCap, cancelData } from "../../../core/src/control/shrink-guards.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { resolveShrinkTarget } from "../../../core/src/control/spans.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

function context() {
  const b = new SessionBuilder().user("the task");
  b.toolUse("read", { path: "skills/deploy/SKILL.md" }, "step 1: run the gate", { id: "c_skill" });
  b.toolUse("read", { path: "src/a.ts" }, "export const a = 1;", { id: "c_a" });
  b.user("a follow-up").assistant("ok").user("the current ask");
  return { b, context: buildPiContext(b.entries) };
}

describe("what a shrink may replace", () => {
  it("refuses protected output: a result whose call reads a protected path", () => {
    const { context: c } = context();
    const skill = resolveShrinkTarget(c, { by_tool_call_id: "c_skill" })!;
    expect(shrinkRefusal(c, skill.position, DEFAULT_CONFIG)).toMatch(/protected/);
    const plain = resolveShrinkTarget(c, { by_tool_call_id: "c_a" })!;
    expect(shrinkRefusal(c, plain.position, DEFAULT_CONFIG)).toBeUndefined();
    expect(shrinkRefusal(c, plain.position, { ...DEFAULT_CONFIG, protectedTools: ["read"] })).toMatch(/protected/);
  });

  it("refuses the person's first and latest messages, not the ones between", () => {
    const { context: c } = context();
    const at = (text: string) => resolveShrinkTarget(c, { by_content_includes: text })!.position;
    expect(shrinkRefusal(c, at("the task"), DEFAULT_CONFIG)).toMatch(/first message/);
    expect(shrinkRefusal(c, at("the current ask"), DEFAULT_CONFIG)).toMatch(/latest message/);
    expect(shrinkRefusal(c, at("a follow-up"), DEFAULT_CONFIG)).toBeUndefined();
  });
});

describe("writing shrinks", () => {
  it("a marker written with shrinkData reads back as an active shrink of its pinned message", () => {
    const { b, context: c } = context();
    const found = resolveShrinkTarget(c, { by_tool_name: "read", occurrence: "last" })!;
    b.custom("mulligan:shrink", shrinkData({ id: "s1", target: { by_tool_name: "read", occurrence: "last" }, replacement: "a = 1", pinnedEntryId: found.entryId, seq: 1, ts: 5 }));
    const [marker] = readControls(b.entries).markers;
    expect(marker).toMatchObject({ kind: "shrink", id: "s1", state: "active", targetEntryId: found.entryId });
    b.custom("mulligan:cancel", cancelData("s1", "cap", 2, 6));
    expect(readControls(b.entries).markers[0]).toMatchObject({ state: "cancelled", cancel: { reason: "cap" } });
  });

  it("past the cap the oldest active shrinks give way, by their order of writing", () => {
    const { b, context: c } = context();
    const pin = resolveShrinkTarget(c, { by_tool_call_id: "c_a" })!.entryId;
    for (const [id, seq] of [["s3", 3], ["s1", 1], ["s2", 2]] as const) {
      b.custom("mulligan:shrink", shrinkData({ id, target: { by_tool_call_id: "c_a" }, replacement: id, pinnedEntryId: pin, seq, ts: seq }));
    }
    const controls = readControls(b.entries);
    expect(shrinksOverCap(controls, 3).map((s) => s.id)).toEqual(["s1"]);
    expect(shrinksOverCap(controls, 2).map((s) => s.id)).toEqual(["s1", "s2"]);
    expect(shrinksOverCap(controls, 4)).toEqual([]);
  });
});

describe("words for the person", () => {
  it("describes each kind of target", () => {
    expect(describeShrinkTarget({ by_tool_call_id: "c9" })).toBe("the result of tool call c9");
    expect(describeShrinkTarget({ by_tool_name: "bash", occurrence: "first" })).toBe("the first bash result");
    expect(describeShrinkTarget({ by_content_includes: "needle" })).toBe('the first message containing "needle"');
  });

  it("caps a long replacement and says how long it was", () => {
    expect(capForNotice("short", 10)).toBe("short");
    expect(capForNotice("x".repeat(50), 10)).toBe(`${"x".repeat(10)}… (50 characters in all)`);
  });
});
