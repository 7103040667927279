import { describe, expect, it } from "vitest";
import { checkRewind, type RewindCheckInput } from "../../../core/src/control/rewind-guards.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { visibleContext } from "../../../core/src/control/spans.ts";
import { CANCEL_ENTRY, CHECKPOINT_PREFIX, CONTROL_SCHEMA, REWIND_ENTRY } from "../../../core/src/control/control-entries.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

const OWN_CALL = "call_rewind";

/** The state the rewind tool sees while its own call runs: the branch read, the visible context. */
function stateOf(s: SessionBuilder) {
  const controls = readControls(s.entries);
  return { controls, context: visibleContext(buildPiContext(s.entries), controls) };
}

function check(s: SessionBuilder, overrides: Partial<RewindCheckInput> = {}) {
  return checkRewind({
    ...stateOf(s),
    granularity: "last_tool_call_group",
    excludeToolCallId: OWN_CALL,
    config: DEFAULT_CONFIG.selfControl,
    contextTokens: 1000,
    contextWindow: 100_000,
    ...overrides,
  });
}

/** The rewind's own call, as it is on the branch while the tool runs (its result not yet written). */
const ownCall = (s: SessionBuilder) => s.assistant({ toolCalls: [{ id: OWN_CALL, name: "context_rewind", args: {} }] });

let markerCount = 0;
function rewindMarker(s: SessionBuilder, hideEntryIds: string[], ts: number) {
  const id = `rw-${++markerCount}`;
  s.custom(REWIND_ENTRY, { schema: CONTROL_SCHEMA, v: 1, kind: "rewind", id, granularity: "last_tool_call_group", hideEntryIds, seq: markerCount, ts });
  return id;
}

const timestampOf = (s: SessionBuilder, entryId: string) => ((s.entry(entryId) as { message: AgentMessage }).message).timestamp;
const hiddenRoles = (s: SessionBuilder, result: ReturnType<typeof check>) => {
  if (!result.ok) throw new Error(result.reason);
  const { context } = stateOf(s);
  return result.span.positions.map((p) => context[p]!.message.role);
};

describe("checkRewind: what a rewind hides", () => {
  it("last_tool_call_group: the newest call and its result, never the rewind's own call", () => {
    const s = new SessionBuilder().user("find the auth check").toolUse("read", { path: "a.ts" }, "small").toolUse("bash", { command: "grep -r auth ." }, "huge");
    const bashCall = s.entries.at(-2)!.id;
    const bashResult = s.lastId;
    ownCall(s);
    const result = check(s);
    expect(result).toEqual({ ok: true, span: { entryIds: [bashCall, bashResult], positions: [3, 4] }, keptProtected: 0 });
  });

  it("last_turn: the agent's work after the latest user message, never a user message or a note", () => {
    const s = new SessionBuilder().user("task").assistant("done").user("now this").toolUse("bash", { command: "ls" }, "x").assistant("thinking");
    ownCall(s);
    const result = check(s, { granularity: "last_turn" });
    expect(hiddenRoles(s, result)).toEqual(["assistant", "toolResult", "assistant"]);
  });

  it("protected output stays out of the span; a span of nothing else is refused", () => {
    const s = new SessionBuilder().user("release it").toolUse("read", { path: "skills/release/SKILL.md" }, "1. run the gate").toolUse("bash", { command: "npm publish" }, "published");
    ownCall(s);
    const protects = (toolName: string, args: unknown) => toolName === "read" && (args as { path?: string }).path === "skills/release/SKILL.md";
    const turn = check(s, { granularity: "last_turn", protects });
    expect(turn.ok && turn.keptProtected).toBe(1);
    expect(hiddenRoles(s, turn)).toEqual(["assistant", "toolResult"]);
    expect(turn.ok && turn.span.positions).toEqual([3, 4]);
    const s2 = new SessionBuilder().user("release it").toolUse("read", { path: "skills/release/SKILL.md" }, "1. run the gate");
    ownCall(s2);
    expect(check(s2, { protects })).toEqual({ ok: false, reason: expect.stringContaining("everything in the span is protected output") });
  });

  it("nothing to hide is a refusal", () => {
    const s = new SessionBuilder().user("hi");
    ownCall(s);
    expect(check(s)).toEqual({ ok: false, reason: "there is no earlier tool call to rewind" });
  });
});

describe("checkRewind: the bounds", () => {
  it("refuses once maxActiveRewinds rewinds are active; a cancelled one does not count", () => {
    const s = new SessionBuilder().user("task").toolUse("bash", { command: "a" }, "1").toolUse("bash", { command: "b" }, "2").toolUse("bash", { command: "c" }, "3");
    const first = rewindMarker(s, ["e2", "e3"], 0);
    rewindMarker(s, ["e4", "e5"], 0);
    ownCall(s);
    const config = { ...DEFAULT_CONFIG.selfControl, maxActiveRewinds: 2 };
    const refused = check(s, { config });
    expect(refused.ok).toBe(false);
    expect(refused.ok ? "" : refused.reason).toContain("2 rewinds are already active (selfControl.maxActiveRewinds is 2)");
    s.custom(CANCEL_ENTRY, { schema: CONTROL_SCHEMA, v: 1, kind: "cancel", targetId: first, seq: 9, ts: 0 });
    expect(check(s, { config }).ok).toBe(true);
  });

  it("refuses once maxRewindsPerPrompt rewinds landed back at the latest user message; those of earlier prompts do not count", () => {
    const s = new SessionBuilder().user("first").toolUse("bash", { command: "a" }, "1");
    rewindMarker(s, ["e2", "e3"], timestampOf(s, "e3") + 1);
    s.user("second");
    const latestUser = s.lastId;
    s.toolUse("bash", { command: "b" }, "2").toolUse("bash", { command: "c" }, "3");
    const config = { ...DEFAULT_CONFIG.selfControl, maxRewindsPerPrompt: 1 };
    ownCall(s);
    expect(check(s, { config }).ok).toBe(true);
    rewindMarker(s, [s.entries.at(-3)!.id, s.entries.at(-2)!.id], timestampOf(s, latestUser) + 10);
    const refused = check(s, { config });
    expect(refused).toEqual({ ok: false, reason: expect.stringContaining("1 rewind has already landed back at the latest user message (selfControl.maxRewindsPerPrompt is 1)") });
  });

  it("refuses at refuseRewindAtFraction of the window; an unknown window skips the bound", () => {
    const s = new SessionBuilder().user("task").toolUse("bash", { command: "a" }, "1");
    ownCall(s);
    expect(check(s, { contextTokens: 8999, contextWindow: 10_000 }).ok).toBe(true);
    expect(check(s, { contextTokens: 9000, contextWindow: 10_000 })).toEqual({ ok: false, reason: expect.stringContaining("the context is at 90% of the window") });
    expect(check(s, { contextTokens: 9000, contextWindow: undefined }).ok).toBe(true);
    expect(check(s, { contextTokens: 9000, contextWindow: 0 }).ok).toBe(true);
  });
});

describe("checkRewind: checkpoints", () => {
  function withCheckpoint() {
    const s = new SessionBuilder().user("task").assistant("plan ready");
    const marked = s.lastId;
    s.label(marked, `${CHECKPOINT_PREFIX}before`);
    s.user("try the risky refactor").toolUse("edit", { path: "a.ts" }, "edited").assistant("it broke");
    return { s, marked };
  }

  it("hides everything after the checkpoint's message, the person's later prompts included", () => {
    const { s, marked } = withCheckpoint();
    ownCall(s);
    const result = check(s, { granularity: "checkpoint", checkpoint: "before" });
    expect(hiddenRoles(s, result)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(result.ok && result.checkpoint).toMatchObject({ name: "before", targetEntryId: marked });
  });

  it("refuses a missing name, an invalid one, one not set, and one cleared (used up or revoked)", () => {
    const { s, marked } = withCheckpoint();
    ownCall(s);
    expect(check(s, { granularity: "checkpoint" })).toEqual({ ok: false, reason: "a checkpoint rewind needs the checkpoint's name" });
    expect(check(s, { granularity: "checkpoint", checkpoint: "Before!" })).toEqual({ ok: false, reason: expect.stringContaining("is not a checkpoint name") });
    expect(check(s, { granularity: "checkpoint", checkpoint: "other" })).toEqual({ ok: false, reason: expect.stringContaining('no checkpoint named "other" is set') });
    s.label(marked, undefined);
    expect(check(s, { granularity: "checkpoint", checkpoint: "before" })).toEqual({ ok: false, reason: expect.stringContaining('no checkpoint named "before" is set') });
  });

  it("refuses when the checkpoint's message is gone from the context", () => {
    const s = new SessionBuilder().user("task").toolUse("bash", { command: "a" }, "1");
    const call = s.entries.at(-2)!.id;
    s.label(s.lastId, `${CHECKPOINT_PREFIX}cp`);
    rewindMarker(s, [call, s.lastId], 0);
    s.toolUse("bash", { command: "b" }, "2");
    ownCall(s);
    expect(check(s, { granularity: "checkpoint", checkpoint: "cp" })).toEqual({ ok: false, reason: expect.stringContaining("no longer in the context") });
  });

  it("a name set on two messages goes back to the later one", () => {
    const s = new SessionBuilder().user("task").assistant("one");
    s.label(s.lastId, `${CHECKPOINT_PREFIX}cp`);
    s.user("more").assistant("two");
    const later = s.lastId;
    s.label(later, `${CHECKPOINT_PREFIX}cp`);
    s.user("again").assistant("three");
    ownCall(s);
    const result = check(s, { granularity: "checkpoint", checkpoint: "cp" });
    expect(result.ok && result.checkpoint?.targetEntryId).toBe(later);
    expect(hiddenRoles(s, result)).toEqual(["user", "assistant"]);
  });

  it("a checkpoint set before the first prompt never hides the task itself", () => {
    const s = new SessionBuilder().customMessage("other-extension", "project rules");
    s.label(s.lastId, `${CHECKPOINT_PREFIX}start`);
    s.user("the task").toolUse("bash", { command: "a" }, "1");
    ownCall(s);
    const result = check(s, { granularity: "checkpoint", checkpoint: "start" });
    expect(hiddenRoles(s, result)).toEqual(["assistant", "toolResult"]);
  });
});
