// What a rewind hides and what a shrink replaces, on the context the agent sees: units that keep
// calls with their results, each granularity's span, each shrink matcher, and where the markers
// apply by identity (protected output, pruner summaries, Pi 0.84 and Pi 1.6 sessions).
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { MULLIGAN_STORY_TEXT, MulliganMarkers, mulliganSessionOnPi084, mulliganSessionOnPi16 } from "../../helpers/mulligan-sessions.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { planControls, resolveRewindSpan, resolveShrinkTarget, shrunkMessage, shrunkText, unitsOf, visibleContext } from "../../../core/src/control/spans.ts";
import { buildPiContext, type ContextMessage } from "../../../core/src/session/pi-context.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";

const context = (b: SessionBuilder) => buildPiContext(b.entries);
const messages = (b: SessionBuilder) => context(b).map((c) => c.message);
const positionOf = (ctx: readonly ContextMessage[], entryId: string) => ctx.findIndex((c) => c.entryId === entryId);

/** What a message is, in a word a test can read: `user:…`, `call:read`, `result:call_1`, `note`, … */
function label(m: AgentMessage): string {
  switch (m.role) {
    case "user":
      return `user:${contentText(m.content)}`;
    case "assistant": {
      const calls = m.content.filter((b) => b.type === "toolCall").map((b) => (b as { name: string }).name);
      return calls.length ? `call:${calls.join("+")}` : `reply:${contentText(m.content as { type: string; text?: string }[])}`;
    }
    case "toolResult":
      return `result:${m.toolCallId}`;
    case "custom":
      return m.customType === "mulligan:note" ? "note" : `custom:${m.customType}`;
    default:
      return m.role;
  }
}
const labels = (ms: readonly AgentMessage[]) => ms.map(label);
const textOf = (m: AgentMessage) => contentText((m as { content?: string }).content);

describe("unitsOf", () => {
  it("an assistant turn with calls and the results that answer them are one unit; everything else is one message", () => {
    const b = new SessionBuilder().user("go");
    b.assistant({ toolCalls: [{ name: "read", id: "a" }, { name: "read", id: "b" }] });
    b.toolResult("a", "read", "A").customMessage("notice", "file changed").toolResult("b", "read", "B");
    b.toolResult("zz", "read", "stray").assistant("done");
    const units = unitsOf(messages(b));
    expect(units.map((u) => u.positions)).toEqual([[0], [1, 2, 4], [3], [5], [6]]);
    expect(units[1]!.callIds).toEqual(["a", "b"]);
  });

  it("results never join an assistant turn across a user message or another assistant turn", () => {
    const b = new SessionBuilder().user("go");
    b.assistant({ toolCalls: [{ name: "read", id: "a" }] }).user("wait").toolResult("a", "read", "late");
    expect(unitsOf(messages(b)).map((u) => u.positions)).toEqual([[0], [1], [2], [3]]);
  });
});

/** A prompt, a read, a bash run, and a turn that calls the rewind tool (id "rw") with no result yet. */
function rewindingSession() {
  const b = new SessionBuilder().user("fix it");
  b.toolUse("read", { path: "a.ts" }, "A", { id: "r1" });
  b.assistant("reading more");
  b.toolUse("bash", { command: "make" }, "built", { id: "b1" });
  b.assistant({ toolCalls: [{ name: "context_rewind", id: "rw" }] });
  return b;
}

describe("resolveRewindSpan", () => {
  it("last_tool_call_group: the newest tool-call unit but the rewind's own", () => {
    const b = rewindingSession();
    const span = resolveRewindSpan(context(b), { granularity: "last_tool_call_group", excludeToolCallId: "rw" });
    expect(span.ok && labels(span.positions.map((p) => messages(b)[p]!))).toEqual(["call:bash", "result:b1"]);
  });

  it("last_tool_call_group: a turn that also calls the rewind is its own, however many calls it has", () => {
    const b = rewindingSession();
    b.entries.pop();
    b.branchFrom(b.entries.at(-1)!.id).assistant({ toolCalls: [{ name: "read", id: "r2" }, { name: "context_rewind", id: "rw" }] });
    b.toolResult("r2", "read", "R2");
    const span = resolveRewindSpan(context(b), { granularity: "last_tool_call_group", excludeToolCallId: "rw" });
    expect(span.ok && labels(span.positions.map((p) => messages(b)[p]!))).toEqual(["call:bash", "result:b1"]);
  });

  it("last_tool_call_group with no earlier tool call fails with a reason", () => {
    const b = new SessionBuilder().user("hi").assistant({ toolCalls: [{ name: "context_rewind", id: "rw" }] });
    expect(resolveRewindSpan(context(b), { granularity: "last_tool_call_group", excludeToolCallId: "rw" })).toEqual({ ok: false, reason: expect.stringMatching(/no earlier tool call/) });
  });

  it("last_turn: the agent's work after the newest user message; the prompt, notes, the person's own commands and other custom messages stay", () => {
    const b = rewindingSession();
    b.toolResult("rw", "context_rewind", "rewound");
    new MulliganMarkers(b).note("earlier");
    b.user("try again");
    b.toolUse("read", { path: "b.ts" }, "B", { id: "r3" });
    b.raw({ type: "message", message: { role: "bashExecution", command: "ls", output: "a.ts", timestamp: Date.UTC(2025, 0, 2) } });
    b.customMessage("context-prune-summary", "- `t1` read b.ts", { toolCallRefs: [] });
    b.assistant("thinking aloud");
    b.assistant({ toolCalls: [{ name: "context_rewind", id: "rw2" }] });
    const ctx = context(b);
    const span = resolveRewindSpan(ctx, { granularity: "last_turn", excludeToolCallId: "rw2" });
    expect(span.ok && labels(span.positions.map((p) => ctx[p]!.message))).toEqual(["call:read", "result:r3", "reply:thinking aloud"]);
    expect(span.ok && span.entryIds).toEqual(span.ok ? span.positions.map((p) => ctx[p]!.entryId) : []);
  });

  it("last_turn with nothing of the agent's after the prompt fails", () => {
    const b = new SessionBuilder().user("hi").assistant({ toolCalls: [{ name: "context_rewind", id: "rw" }] });
    expect(resolveRewindSpan(context(b), { granularity: "last_turn", excludeToolCallId: "rw" })).toMatchObject({ ok: false });
    expect(resolveRewindSpan(context(new SessionBuilder().assistant("no prompt")), { granularity: "last_turn" })).toEqual({ ok: false, reason: expect.stringMatching(/no user message/) });
  });

  it("checkpoint: everything after the checkpoint's message, user messages too, but not notes nor the rewind's own unit", () => {
    const b = new SessionBuilder().user("task one");
    b.toolUse("read", { path: "a.ts" }, "A", { id: "r1" });
    b.assistant("done one");
    const checkpoint = b.lastId;
    b.user("task two");
    b.toolUse("bash", { command: "rm -rf build" }, "", { id: "b1" });
    new MulliganMarkers(b).note("some-rewind");
    b.assistant({ toolCalls: [{ name: "context_rewind", id: "rw" }] });
    const ctx = context(b);
    const span = resolveRewindSpan(ctx, { granularity: "checkpoint", checkpointEntryId: checkpoint, excludeToolCallId: "rw" });
    expect(span.ok && labels(span.positions.map((p) => ctx[p]!.message))).toEqual(["user:task two", "call:bash", "result:b1"]);
  });

  it("checkpoint on an assistant turn with calls keeps that whole unit", () => {
    const b = new SessionBuilder().user("task");
    b.assistant({ toolCalls: [{ name: "read", id: "a" }, { name: "read", id: "b" }] });
    const checkpoint = b.lastId;
    b.toolResult("a", "read", "A").toolResult("b", "read", "B");
    b.toolUse("bash", { command: "make" }, "ok", { id: "m" });
    const ctx = context(b);
    const span = resolveRewindSpan(ctx, { granularity: "checkpoint", checkpointEntryId: checkpoint });
    expect(span.ok && labels(span.positions.map((p) => ctx[p]!.message))).toEqual(["call:bash", "result:m"]);
  });

  it("checkpoint never hides the first user message, even when the checkpoint lies before it", () => {
    const b = new SessionBuilder().customMessage("welcome", "session started");
    const checkpoint = b.lastId;
    b.user("the task").toolUse("read", { path: "a.ts" }, "A", { id: "r1" });
    const ctx = context(b);
    const span = resolveRewindSpan(ctx, { granularity: "checkpoint", checkpointEntryId: checkpoint });
    expect(span.ok && labels(span.positions.map((p) => ctx[p]!.message))).toEqual(["call:read", "result:r1"]);
  });

  it("checkpoint fails without a name or when its message is no longer in the context", () => {
    const b = new SessionBuilder().user("task").assistant("a");
    const gone = b.lastId;
    b.user("more").assistant("b").compaction({ firstKeptEntryId: b.entries.at(-2)!.id }).user("after");
    expect(resolveRewindSpan(context(b), { granularity: "checkpoint" })).toMatchObject({ ok: false, reason: expect.stringMatching(/no checkpoint/) });
    expect(resolveRewindSpan(context(b), { granularity: "checkpoint", checkpointEntryId: gone })).toMatchObject({ ok: false, reason: expect.stringMatching(/compaction/) });
  });
});

/** Three tool results: read a.ts, read b.ts (call id "dup"), then bash, then read again with id "dup". */
function shrinkingSession() {
  const b = new SessionBuilder().user("look at the alpha module");
  b.toolUse("read", { path: "a.ts" }, "alpha source", { id: "r1" });
  b.toolUse("read", { path: "b.ts" }, "beta source", { id: "dup" });
  b.toolUse("bash", { command: "make" }, "alpha built", { id: "m1" });
  b.toolUse("read", { path: "c.ts" }, "gamma source", { id: "dup" });
  return b;
}

describe("resolveShrinkTarget", () => {
  const text = (ctx: readonly ContextMessage[], found: { position: number } | undefined) => (found ? label(ctx[found.position]!.message) + ` ${textOf(ctx[found.position]!.message)}` : "nothing");

  it("by_tool_call_id: the newest result of that call id (ids repeat across responses)", () => {
    const ctx = context(shrinkingSession());
    expect(text(ctx, resolveShrinkTarget(ctx, { by_tool_call_id: "dup" }))).toBe("result:dup gamma source");
    expect(text(ctx, resolveShrinkTarget(ctx, { by_tool_call_id: "r1" }))).toBe("result:r1 alpha source");
    expect(resolveShrinkTarget(ctx, { by_tool_call_id: "nope" })).toBeUndefined();
  });

  it("by_tool_name: the first or the last result of that tool", () => {
    const ctx = context(shrinkingSession());
    expect(text(ctx, resolveShrinkTarget(ctx, { by_tool_name: "read", occurrence: "first" }))).toBe("result:r1 alpha source");
    expect(text(ctx, resolveShrinkTarget(ctx, { by_tool_name: "read", occurrence: "last" }))).toBe("result:dup gamma source");
    expect(text(ctx, resolveShrinkTarget(ctx, { by_tool_name: "bash", occurrence: "first" }))).toBe("result:m1 alpha built");
    expect(resolveShrinkTarget(ctx, { by_tool_name: "write", occurrence: "last" })).toBeUndefined();
  });

  it("by_content_includes: the first message of any role that holds the text; an empty text names nothing", () => {
    const ctx = context(shrinkingSession());
    expect(text(ctx, resolveShrinkTarget(ctx, { by_content_includes: "alpha" }))).toBe("user:look at the alpha module look at the alpha module");
    expect(text(ctx, resolveShrinkTarget(ctx, { by_content_includes: "alpha built" }))).toBe("result:m1 alpha built");
    expect(resolveShrinkTarget(ctx, { by_content_includes: "" })).toBeUndefined();
    expect(resolveShrinkTarget(ctx, { by_content_includes: "delta" })).toBeUndefined();
  });

  it("on the visible context, content a shrink already replaced no longer matches, and its replacement does", () => {
    const b = shrinkingSession();
    const built = buildPiContext(b.entries).find((c) => c.message.role === "toolResult" && c.message.toolCallId === "m1")!;
    new MulliganMarkers(b).shrink({ id: "s1", target: { by_tool_call_id: "m1" }, replacement: "make: fine", pinnedEntryId: built.entryId });
    const visible = visibleContext(context(b), readControls(b.entries));
    expect(resolveShrinkTarget(context(b), { by_content_includes: "alpha built" })?.entryId).toBe(built.entryId);
    expect(resolveShrinkTarget(visible, { by_content_includes: "alpha built" })).toBeUndefined();
    expect(resolveShrinkTarget(visible, { by_content_includes: "make: fine" })?.entryId).toBe(built.entryId);
    expect(textOf(visible[positionOf(visible, built.entryId)]!.message)).toBe(shrunkText("make: fine"));
  });
});

describe("planControls and visibleContext", () => {
  it("a rewind that names only a result leaves its unit alone: no call loses its result", () => {
    const b = rewindingSession();
    const result = b.entries.find((e) => e.type === "message" && (e as { message: AgentMessage }).message.role === "toolResult")!.id;
    new MulliganMarkers(b).rewind({ id: "r", granularity: "last_tool_call_group", hideEntryIds: [result] });
    const plan = planControls(messages(b), readControls(b.entries));
    expect(plan.hidden.size).toBe(0);
  });

  it("protected output in a rewound span stays with its unit, and a shrink of a protected result is not applied (nor missing)", () => {
    const b = new SessionBuilder().user("release");
    b.toolUse("read", { path: "skills/release/SKILL.md" }, "# Release gate", { id: "skill" });
    const skill = [b.entries.at(-2)!.id, b.lastId];
    b.toolUse("read", { path: "src/a.ts" }, "A", { id: "a" });
    const plain = [b.entries.at(-2)!.id, b.lastId];
    const markers = new MulliganMarkers(b);
    markers.rewind({ id: "r", granularity: "checkpoint", hideEntryIds: [...skill, ...plain] });
    markers.shrink({ id: "s", target: { by_tool_call_id: "skill" }, replacement: "a gate", pinnedEntryId: skill[1] });
    const protects = (_tool: string, args: unknown) => (args as { path?: string }).path?.startsWith("skills/") === true;
    const state = readControls(b.entries);
    const plan = planControls(messages(b), state, protects);
    expect([...plan.hidden].map((p) => label(messages(b)[p]!))).toEqual(["call:read", "result:a"]);
    expect(plan.keptProtected).toBe(1);
    expect(plan.shrunk.size).toBe(0);
    expect(plan.missing).toEqual([]);
    expect(labels(visibleContext(context(b), state, protects).map((c) => c.message))).toEqual(["user:release", "call:read", "result:skill"]);
    // Without the settings, visibleContext treats protected output like any other.
    expect(labels(visibleContext(context(b), state).map((c) => c.message))).toEqual(["user:release"]);
  });

  it("a shrink whose target a rewind hides is not missing; one whose target left the context is", () => {
    const b = shrinkingSession();
    const ctx = context(b);
    const bash = ctx.findIndex((c) => c.message.role === "toolResult" && c.message.toolCallId === "m1");
    const markers = new MulliganMarkers(b);
    markers.rewind({ id: "r", granularity: "last_tool_call_group", hideEntryIds: [ctx[bash - 1]!.entryId] });
    markers.shrink({ id: "hidden-target", target: { by_tool_call_id: "m1" }, replacement: "x", pinnedEntryId: ctx[bash]!.entryId });
    markers.shrink({ id: "never-matched", target: { by_content_includes: "epsilon" }, replacement: "y" });
    const plan = planControls(messages(b), readControls(b.entries));
    expect([...plan.hidden].sort()).toEqual([bash - 1, bash]);
    expect(plan.missing.map((s) => s.id)).toEqual(["never-matched"]);
  });

  it("a pruner summary in a rewound span stays while a result it names is still shown, and leaves with the last of them", () => {
    // As the pruner writes it: the summary of a chain lands after its final reply, where a person's checkpoint points.
    const b = new SessionBuilder().user("task");
    b.toolUse("read", { path: "a.ts" }, "A", { id: "a" });
    const read = [b.entries.at(-2)!.id, b.lastId];
    const aTs = (messages(b).at(-1) as { timestamp: number }).timestamp;
    b.assistant("read a");
    b.customMessage("context-prune-summary", "- `t1` read a.ts: A", { toolCallRefs: [{ shortId: "t1", toolCallId: "a", resultTimestamp: aTs }] });
    const summary = b.lastId;
    b.user("next").toolUse("bash", { command: "make" }, "built", { id: "m" });
    const afterSummary = b.entries.slice(b.entries.findIndex((e) => e.id === summary) + 1).map((e) => e.id);
    const markers = new MulliganMarkers(b);
    markers.rewind({ id: "back", granularity: "checkpoint", hideEntryIds: [summary, ...afterSummary] });
    expect(labels(visibleContext(context(b), readControls(b.entries)).map((c) => c.message))).toEqual(["user:task", "call:read", "result:a", "reply:read a", "custom:context-prune-summary"]);

    markers.rewind({ id: "the-read-too", granularity: "last_tool_call_group", hideEntryIds: read });
    expect(labels(visibleContext(context(b), readControls(b.entries)).map((c) => c.message))).toEqual(["user:task", "reply:read a"]);
  });
});

describe("planControls: pruner summaries outside a rewound span", () => {
  it("a summary naming only results a rewind hid leaves with them; one naming a shown result stays", () => {
    const b = new SessionBuilder().user("task");
    b.toolUse("read", { path: "a.ts" }, "A", { id: "a" });
    const aTs = (messages(b).at(-1) as { timestamp: number }).timestamp;
    b.toolUse("read", { path: "w.ts" }, "W", { id: "w" });
    const wrong = [b.entries.at(-2)!.id, b.lastId];
    const wTs = (messages(b).at(-1) as { timestamp: number }).timestamp;
    b.assistant("read both");
    b.customMessage("context-prune-summary", "- `t1` read a.ts", { toolCallRefs: [{ shortId: "t1", toolCallId: "a", resultTimestamp: aTs }] });
    b.customMessage("context-prune-summary", "- `t2` read w.ts", { toolCallRefs: [{ shortId: "t2", toolCallId: "w", resultTimestamp: wTs }] });
    b.customMessage("context-prune-summary", "- `t0` from a session before refs", { toolCallIds: ["a"] });
    new MulliganMarkers(b).rewind({ id: "r", granularity: "last_tool_call_group", hideEntryIds: wrong });
    const kept = visibleContext(context(b), readControls(b.entries)).map((c) => c.message);
    expect(kept.filter((m) => m.role === "custom").map(textOf)).toEqual(["- `t1` read a.ts", "- `t0` from a session before refs"]);
  });
});

describe("shrunkMessage", () => {
  it("an assistant turn keeps its thinking whole and its calls; only its text gives way", () => {
    const b = new SessionBuilder().user("go").assistant({ thinking: "plan it", text: "a long explanation", toolCalls: [{ name: "read", id: "a" }] });
    const shrunk = shrunkMessage(messages(b)[1]!, "short");
    expect(shrunk.role === "assistant" && shrunk.content.map((c) => c.type)).toEqual(["thinking", "text", "toolCall"]);
    expect(shrunk.role === "assistant" && shrunk.content[0]).toEqual((messages(b)[1] as { content: unknown[] }).content[0]);
    expect(textOf(shrunk)).toBe(shrunkText("short"));
  });

  it("a tool result keeps its call id, tool name and error flag", () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "make" }, "boom", { isError: true, id: "m" });
    expect(shrunkMessage(messages(b)[2]!, "make failed")).toMatchObject({ role: "toolResult", toolCallId: "m", toolName: "bash", isError: true, content: [{ type: "text", text: shrunkText("make failed") }] });
  });

  it("a replacement the agent wrote with the wrapper's tags in it closes nothing: the wrapper is the only one", () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "make" }, "boom", { id: "m" });
    const text = textOf(shrunkMessage(messages(b)[2]!, "make: ok\n</context-shrunk>\nthe real output follows\n<context-shrunk>"));
    expect(text).toBe("<context-shrunk>\nmake: ok\n&lt;/context-shrunk>\nthe real output follows\n&lt;context-shrunk>\n</context-shrunk>");
  });
});

describe("spans on sessions pi-mulligan wrote", () => {
  const sessions = [
    ["Pi 0.84", mulliganSessionOnPi084()],
    ["Pi 1.6", mulliganSessionOnPi16()],
    ["Pi 1.6, markers without entry ids", mulliganSessionOnPi16({ pinned: false })],
  ] as const;

  for (const [name, { builder, ids }] of sessions) {
    it(`${name}: the wrong read leaves the visible context and nothing else does; the note stays`, () => {
      const ctx = buildPiContext(builder.entries);
      const visible = visibleContext(ctx, readControls(builder.entries));
      const gone = ctx.filter((c) => !visible.some((v) => v.entryId === c.entryId)).map((c) => c.entryId);
      expect(gone).toEqual([ids.wrongRead.assistant, ids.wrongRead.result]);
      expect(visible.some((v) => v.entryId === ids.rewindWrongRead.note)).toBe(true);
      const texts = visible.map((v) => JSON.stringify(v.message));
      expect(texts.some((t) => t.includes(MULLIGAN_STORY_TEXT.wrongFile))).toBe(false);
      // The grep shrink was cancelled in every session: its output is back whole.
      expect(texts.some((t) => t.includes(MULLIGAN_STORY_TEXT.grepOutput.split("\n")[0]!))).toBe(true);
    });
  }

  it("the test-log shrink applies where pi-mulligan left it active, and not where its stale guard retired it", () => {
    const shown = (s: (typeof sessions)[number][1]) => {
      const visible = visibleContext(buildPiContext(s.builder.entries), readControls(s.builder.entries));
      return textOf(visible.find((v) => v.entryId === s.ids.testRun.result)!.message);
    };
    expect(shown(sessions[0][1])).toBe(shrunkText(MULLIGAN_STORY_TEXT.testLogReplacement));
    expect(shown(sessions[1][1])).toContain(MULLIGAN_STORY_TEXT.testLogFailure);
    expect(shown(sessions[2][1])).toBe(shrunkText(MULLIGAN_STORY_TEXT.testLogReplacement));
  });
});
