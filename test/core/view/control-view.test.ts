// The agent's markers in the model view (`pi-pruner view`, the editor's model view) and in the
// session view: each rewind and shrink with its state, what it does to what the model is sent,
// and where a rewound span was — over sessions pi-mulligan wrote on Pi 0.84 and on Pi 1.6.
import { describe, expect, it } from "vitest";
import { MULLIGAN_MARKER_UUIDS, MULLIGAN_STORY_TEXT, mulliganSessionOnPi084, mulliganSessionOnPi16, type MulliganSession } from "../../helpers/mulligan-sessions.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { contentText, type AgentMessage } from "../../../core/src/shapes/messages.ts";
import { buildModelView, messagesAsText, modelViewText, type ModelView } from "../../../core/src/view/model-view.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import type { RewindView, ShrinkView } from "../../../core/src/view/control-view.ts";
import { INERT_MARKERS } from "../../../core/src/view/session-writer.ts";

const config = DEFAULT_CONFIG;
const modelOf = (session: MulliganSession | SessionBuilder, options: { config?: PruneConfig } = {}) =>
  buildModelView(parseSessionText((session instanceof SessionBuilder ? session : session.builder).toJsonl()), { config: options.config ?? config });
const textOf = (m: AgentMessage) => (m.role === "assistant" || m.role === "user" || m.role === "toolResult" || m.role === "custom" ? contentText(m.content as string) : "");
const sentText = (view: ModelView) => view.messages.map(textOf).join("\n");
const rewind = (view: ModelView, id: string) => view.controls.rewinds.find((r) => r.markerId === id) as RewindView;
const shrink = (view: ModelView, id: string) => view.controls.shrinks.find((s) => s.markerId === id) as ShrinkView;
const resultIndex = (view: ModelView, callId: string) => view.messages.findIndex((m) => m.role === "toolResult" && m.toolCallId === callId);
const callIndex = (view: ModelView, callId: string) =>
  view.messages.findIndex((m) => m.role === "assistant" && Array.isArray(m.content) && m.content.some((b) => b.type === "toolCall" && b.id === callId));

describe("the model view of a session pi-mulligan wrote on Pi 0.84", () => {
  const session = mulliganSessionOnPi084();
  const view = modelOf(session);

  it("leaves the rewound read out and says so: 2 messages, active, with the note's three fields", () => {
    expect(sentText(view)).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);
    expect(resultIndex(view, session.ids.wrongRead.callId)).toBe(-1);
    expect(rewind(view, MULLIGAN_MARKER_UUIDS.rewindWrongRead)).toMatchObject({
      state: "active",
      granularity: "last_tool_call_group",
      hiddenMessages: 2,
      note: { what_happened: MULLIGAN_STORY_TEXT.noteWhatHappened },
    });
    expect(rewind(view, MULLIGAN_MARKER_UUIDS.rewindWrongRead).notApplied).toBeUndefined();
  });

  it("places the rewound span after the message that came before it: the shrink's result, then the rewind's own call", () => {
    const [span] = view.controls.rewoundSpans;
    expect(view.controls.rewoundSpans).toHaveLength(1);
    expect(span).toMatchObject({ markerId: MULLIGAN_MARKER_UUIDS.rewindWrongRead, messages: 2, first: true });
    expect(span!.after).toBe(resultIndex(view, session.ids.shrinkTestLog.callId));
    expect(callIndex(view, session.ids.rewindWrongRead.callId)).toBe(span!.after + 1);
  });

  it("shows the test-log shrink applied and the grep shrink cancelled, with their targets and replacements", () => {
    const testLog = view.messages[resultIndex(view, session.ids.testRun.callId)]!;
    expect(textOf(testLog)).toBe(`<context-shrunk>\n${MULLIGAN_STORY_TEXT.testLogReplacement}\n</context-shrunk>`);
    expect(shrink(view, MULLIGAN_MARKER_UUIDS.shrinkTestLog)).toMatchObject({ state: "active", applied: true, targetText: "the last bash result", replacement: MULLIGAN_STORY_TEXT.testLogReplacement });
    expect(shrink(view, MULLIGAN_MARKER_UUIDS.shrinkGrep)).toMatchObject({ state: "cancelled", cancelReason: "agent", applied: false, targetText: `the result of tool call ${session.ids.grep.callId}` });
    expect(sentText(view)).toContain(MULLIGAN_STORY_TEXT.grepOutput);
    expect(view.controls.shrunkMessages).toEqual([{ at: resultIndex(view, session.ids.testRun.callId), markerId: MULLIGAN_MARKER_UUIDS.shrinkTestLog }]);
    expect(view.controls.checkpoints).toEqual([{ kind: "checkpoint", entryId: session.ids.checkpointLabel, markerId: "before-refactor", targetEntryId: session.ids.task1Final }]);
  });

  it("as text: a [rewound …] line where the span was, with its size and note, and the shrunk result's header naming its shrink", () => {
    const text = modelViewText(view);
    const line = `[rewound ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}: 2 messages — note: what happened: ${MULLIGAN_STORY_TEXT.noteWhatHappened} · true current state: The bug is in src/math.ts: add() subtracts. The test expects 5 for add(2, 3). · next: Edit src/math.ts so add() returns a + b, then run npm test.]`;
    const sections = text.split("\n\n");
    const at = sections.indexOf(line);
    expect(at).toBeGreaterThan(0);
    expect(sections[at - 1]).toMatch(new RegExp(`^── ${resultIndex(view, session.ids.shrinkTestLog.callId) + 1}\\. tool result · mulligan_shrink · `));
    expect(sections[at + 1]).toMatch(new RegExp(`^── ${callIndex(view, session.ids.rewindWrongRead.callId) + 1}\\. assistant ──\\n→ mulligan_rewind `));
    expect(text).toContain(`── ${resultIndex(view, session.ids.testRun.callId) + 1}. tool result · bash · ${session.ids.testRun.callId} · shrunk by ${MULLIGAN_MARKER_UUIDS.shrinkTestLog} ──`);
    expect(text).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);
    // Everything but the marker line and the shrink's name is the plain text of the messages.
    expect(text.replace(`${line}\n\n`, "").replace(` · shrunk by ${MULLIGAN_MARKER_UUIDS.shrinkTestLog}`, "")).toBe(messagesAsText(view.messages));
  });
});

describe("the model view of a session pi-mulligan wrote on Pi 1.6", () => {
  it("applies the pinned rewind though pi-mulligan's own filter never did, and shows the test-log shrink retired by its stale guard", () => {
    const session = mulliganSessionOnPi16();
    const view = modelOf(session);
    expect(session.ids.system).toBeDefined();
    expect(sentText(view)).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);
    expect(rewind(view, MULLIGAN_MARKER_UUIDS.rewindWrongRead)).toMatchObject({ state: "active", hiddenMessages: 2 });
    expect(view.controls.rewoundSpans).toEqual([{ markerId: MULLIGAN_MARKER_UUIDS.rewindWrongRead, after: resultIndex(view, session.ids.shrinkTestLog.callId), messages: 2, first: true }]);
    expect(shrink(view, MULLIGAN_MARKER_UUIDS.shrinkTestLog)).toMatchObject({ state: "cancelled", applied: false });
    expect(sentText(view)).toContain(MULLIGAN_STORY_TEXT.testLogFailure);
    expect(view.controls.shrunkMessages).toEqual([]);
  });

  it("resolves markers written without entry ids from their granularity and target, at the place they were written", () => {
    const session = mulliganSessionOnPi16({ pinned: false });
    const view = modelOf(session);
    expect(sentText(view)).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);
    expect(rewind(view, MULLIGAN_MARKER_UUIDS.rewindWrongRead)).toMatchObject({ state: "active", hiddenEntries: 2, hiddenMessages: 2 });
    expect(shrink(view, MULLIGAN_MARKER_UUIDS.shrinkTestLog)).toMatchObject({ state: "active", applied: true, targetEntryId: session.ids.testRun.result });
    expect(modelViewText(view)).toContain(`[rewound ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}: 2 messages — note: what happened: ${MULLIGAN_STORY_TEXT.noteWhatHappened}`);
  });
});

describe("markers that change nothing say why", () => {
  it("with selfControl off, every marker is listed as active but nothing is left out or shrunk, and the text is messagesAsText", () => {
    const session = mulliganSessionOnPi084();
    const off = { ...config, selfControl: { ...config.selfControl, enabled: false } };
    const view = modelOf(session, { config: off });
    expect(sentText(view)).toContain(MULLIGAN_STORY_TEXT.wrongFile);
    expect(rewind(view, MULLIGAN_MARKER_UUIDS.rewindWrongRead)).toMatchObject({ state: "active", hiddenMessages: 0, notApplied: expect.stringContaining("self-control is off") });
    expect(shrink(view, MULLIGAN_MARKER_UUIDS.shrinkTestLog)).toMatchObject({ state: "active", applied: false, notApplied: expect.stringContaining("self-control is off") });
    expect(view.controls.enabled).toBe(false);
    expect(view.controls.rewoundSpans).toEqual([]);
    expect(modelViewText(view)).toBe(messagesAsText(view.messages));
  });

  it("a rewind of a turn with protected output keeps it, and a shrink of protected output is not shown", () => {
    const b = new SessionBuilder().user("release it");
    b.toolUse("read", { path: "skills/release/SKILL.md" }, "# Release\n1. Run the gate.", { id: "k1" });
    const [call, result] = b.entries.slice(-2).map((e) => e.id);
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: "r1", granularity: "last_tool_call_group", hideEntryIds: [call, result], seq: 1, ts: 1 });
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "k1" }, replacement: "gate", pinnedEntryId: result, seq: 2, ts: 2 });
    b.assistant("done");
    const view = modelOf(b);
    expect(sentText(view)).toContain("1. Run the gate.");
    expect(rewind(view, "r1")).toMatchObject({ state: "active", hiddenMessages: 0, keptProtected: 1, notApplied: expect.stringContaining("protected output") });
    expect(shrink(view, "s1")).toMatchObject({ applied: false, notApplied: expect.stringContaining("protected output") });
    expect(view.controls.rewoundSpans).toEqual([]);
  });

  it("a shrink of a message a rewind hides, and a second rewind of the same messages", () => {
    const b = new SessionBuilder().user("look");
    b.toolUse("bash", { command: "ls" }, "a.txt b.txt", { id: "k1" });
    const [call, result] = b.entries.slice(-2).map((e) => e.id);
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "k1" }, replacement: "two files", pinnedEntryId: result, seq: 1, ts: 1 });
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: "r1", granularity: "last_tool_call_group", hideEntryIds: [call, result], seq: 2, ts: 2 });
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: "r2", granularity: "last_tool_call_group", hideEntryIds: [call, result], seq: 3, ts: 3 });
    b.assistant("nothing there");
    const view = modelOf(b);
    expect(sentText(view)).not.toContain("a.txt b.txt");
    expect(shrink(view, "s1")).toMatchObject({ applied: false, notApplied: "a rewind leaves its message out" });
    expect(rewind(view, "r1")).toMatchObject({ hiddenMessages: 2 });
    expect(rewind(view, "r2")).toMatchObject({ hiddenMessages: 0, notApplied: "an earlier rewind already leaves its messages out" });
    // The span sits between the user message and the final reply.
    expect(view.controls.rewoundSpans).toEqual([{ markerId: "r1", after: 0, messages: 2, first: true }]);
    expect(modelViewText(view).split("\n\n")[1]).toBe("[rewound r1: 2 messages]");
  });

  it("a session without markers has an empty controls view and its text is messagesAsText", () => {
    const view = modelOf(new SessionBuilder().user("hi").toolUse("read", { path: "a.ts" }, "A").assistant("ok"));
    expect(view.controls).toMatchObject({ markers: [], rewinds: [], shrinks: [], checkpoints: [], rewoundSpans: [], shrunkMessages: [], unreadable: [] });
    expect(modelViewText(view)).toBe(messagesAsText(view.messages));
  });
});

describe("the session view's markers", () => {
  it("lists every rewind and shrink in the order written with its state, then the checkpoints", () => {
    const session = mulliganSessionOnPi16();
    const view = buildSessionView(parseSessionText(session.builder.toJsonl()), { config });
    expect(view.markers.map((m) => [m.kind, m.markerId, m.kind === "checkpoint" ? m.targetEntryId : m.state])).toEqual([
      ["shrink", MULLIGAN_MARKER_UUIDS.shrinkTestLog, "cancelled"],
      ["rewind", MULLIGAN_MARKER_UUIDS.rewindWrongRead, "active"],
      ["shrink", MULLIGAN_MARKER_UUIDS.shrinkGrep, "cancelled"],
      ["checkpoint", "before-refactor", session.ids.task1Final],
    ]);
    // On Pi 1.6 pi-mulligan's filter did nothing: the session's rewind is listed, left nothing out, and is credited nothing.
    const rewound = view.markers[1] as RewindView;
    expect(rewound).toMatchObject({ hiddenMessages: 0, hiddenChars: 0, notApplied: INERT_MARKERS, note: { next: "Edit src/math.ts so add() returns a + b, then run npm test." }, ledger: { readFiles: ["src/legacy/math-old.ts"] } });
    expect(view.totals.rewoundChars).toBeUndefined();
    expect(view.markers[0]).toMatchObject({ replacement: MULLIGAN_STORY_TEXT.testLogReplacement, targetText: "the last bash result" });
    // The next request is the one pi-pruner would send: it applies the rewind.
    const next = modelOf(session).controls.rewinds.find((r) => r.markerId === MULLIGAN_MARKER_UUIDS.rewindWrongRead)!;
    expect(next).toMatchObject({ hiddenMessages: 2, state: "active" });
    expect(next.notApplied).toBeUndefined();
  });

  it("a stale cancel makes a marker stale, with its reason; an unreadable marker is a problem of the session, named with its entry", () => {
    const b = new SessionBuilder().user("look");
    b.toolUse("bash", { command: "ls" }, "a.txt", { id: "k1" });
    const result = b.lastId;
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "k1" }, replacement: "one file", pinnedEntryId: result, seq: 1, ts: 1 });
    b.custom("mulligan:cancel", { schema: "pi-mulligan", v: 1, kind: "cancel", targetId: "s1", reason: "stale", seq: 2, ts: 2 });
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", markerId: "old-shape" });
    const unreadable = b.lastId;
    b.assistant("ok");
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config });
    expect(view.markers).toEqual([expect.objectContaining({ kind: "shrink", markerId: "s1", state: "stale", cancelReason: "stale", applied: false })]);
    expect(view.problems).toEqual([`a mulligan:rewind entry (${unreadable}) was skipped: it has no id`]);
  });
});
