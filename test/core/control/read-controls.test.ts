// Reading the agent's self-control markers off a branch: every kind pi-mulligan writes, cancels
// that only move forward, markers that cannot be read, checkpoints from labels, markers written
// without entry ids resolved where they were written, and sessions from Pi 0.84 and Pi 1.6.
import { buildSessionProjection, type SessionEntry as PiSessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { CHECKPOINT_LABEL, MULLIGAN_MARKER_UUIDS, MulliganMarkers, mulliganSessionOnPi084, mulliganSessionOnPi16 } from "../../helpers/mulligan-sessions.ts";
import { ControlsReader, readControls } from "../../../core/src/control/read-controls.ts";
import { messageKey, type RewindMarker, type ShrinkMarker } from "../../../core/src/control/control-entries.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import type { AnyEntry } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

/** The identity of the message an entry contributes to the context. */
function keyOfEntry(entries: AnyEntry[], entryId: string): string {
  const found = buildPiContext(entries).find((c) => c.entryId === entryId);
  if (!found) throw new Error(`entry ${entryId} contributes no message`);
  return messageKey(found.message);
}

const rewindOf = (entries: AnyEntry[], id: string) => readControls(entries).markers.find((m) => m.id === id) as RewindMarker;
const shrinkOf = (entries: AnyEntry[], id: string) => readControls(entries).markers.find((m) => m.id === id) as ShrinkMarker;

/** A prompt, two tool turns, a third one: enough to rewind and shrink in. */
function workSession() {
  const b = new SessionBuilder().user("tidy the repo");
  const markers = new MulliganMarkers(b);
  b.toolUse("read", { path: "a.ts" }, "contents of a");
  const first = { assistant: b.entries.at(-2)!.id, result: b.lastId };
  b.toolUse("read", { path: "b.ts" }, "contents of b");
  const second = { assistant: b.entries.at(-2)!.id, result: b.lastId };
  return { b, markers, first, second };
}

describe("readControls: what a branch holds", () => {
  it("reads every kind pi-mulligan writes: rewind, shrinks, cancel, turn metrics, note and checkpoint", () => {
    const { builder, ids } = mulliganSessionOnPi084();
    const entries = builder.entries;
    const state = readControls(entries);
    expect(state.markers.map((m) => [m.kind, m.id, m.state])).toEqual([
      ["shrink", MULLIGAN_MARKER_UUIDS.shrinkTestLog, "active"],
      ["rewind", MULLIGAN_MARKER_UUIDS.rewindWrongRead, "active"],
      ["shrink", MULLIGAN_MARKER_UUIDS.shrinkGrep, "cancelled"],
    ]);
    const rewind = state.markers[1] as RewindMarker;
    expect(rewind.entryId).toBe(ids.rewindWrongRead.marker);
    expect(rewind.pinned).toBe(true);
    expect(rewind.data.granularity).toBe("last_tool_call_group");
    expect(rewind.data.excludeToolCallId).toBe(ids.rewindWrongRead.callId);
    expect(rewind.data.note?.what_happened).toContain("math-old.ts");
    expect(rewind.data.ledger?.readFiles).toEqual(["src/legacy/math-old.ts"]);
    expect(rewind.hiddenEntryIds).toEqual([ids.wrongRead.assistant, ids.wrongRead.result]);
    expect([...rewind.hidden]).toEqual([keyOfEntry(entries, ids.wrongRead.assistant), keyOfEntry(entries, ids.wrongRead.result)]);
    // pi-mulligan's note names the marker by its entry id, not by its uuid.
    expect(rewind.noteKey).toBe(keyOfEntry(entries, ids.rewindWrongRead.note));

    const testLog = state.markers[0] as ShrinkMarker;
    expect(testLog.targetEntryId).toBe(ids.testRun.result);
    expect(testLog.targetKey).toBe(keyOfEntry(entries, ids.testRun.result));
    expect(testLog.data.target).toEqual({ by_tool_name: "bash", occurrence: "last" });
    const grep = state.markers[2] as ShrinkMarker;
    expect(grep.cancel).toEqual({ entryId: ids.cancelShrinkGrep.marker, reason: "agent" });

    expect(state.checkpoints).toEqual([{ name: "before-refactor", labelEntryId: ids.checkpointLabel, targetEntryId: ids.task1Final }]);
    const seqs = entries.flatMap((e) => (e.type === "custom" ? [(e as { data: { seq: number } }).data.seq] : []));
    expect(state.nextSeq).toBe(Math.max(...seqs) + 1);
    expect(state.lastMetric).toMatchObject({ kind: "turn-metric", seq: Math.max(...seqs), deltaTokens: 15 });
    expect(state.unreadable).toEqual([]);
  });

  it("a note written by our own tools names its rewind by the rewind's id", () => {
    const { b, markers, second } = workSession();
    b.assistant({ toolCalls: [{ name: "context_rewind", args: {}, id: "rw" }] });
    const marker = markers.rewind({ id: "r-own", granularity: "last_tool_call_group", excludeToolCallId: "rw", hideEntryIds: [second.assistant, second.result] });
    b.toolResult("rw", "context_rewind", "rewound");
    const note = markers.note("r-own");
    expect(rewindOf(b.entries, "r-own").entryId).toBe(marker);
    expect(rewindOf(b.entries, "r-own").noteKey).toBe(keyOfEntry(b.entries, note));
  });

  it("a cancel retires only a marker written before it, once: a cancel of a missing or retired marker changes nothing", () => {
    const { b, markers, first } = workSession();
    markers.cancel("s1"); // before the marker it names
    markers.shrink({ id: "s1", target: { by_content_includes: "contents of a" }, replacement: "a.ts: one line", pinnedEntryId: first.result });
    expect(shrinkOf(b.entries, "s1").state).toBe("active");

    markers.cancel("no-such-marker");
    const withStrayCancel = readControls(b.entries);
    expect(withStrayCancel.markers.map((m) => [m.id, m.state, m.cancel])).toEqual([["s1", "active", undefined]]);

    const retiring = markers.cancel("s1", "person");
    markers.cancel("s1", "stale");
    markers.cancel("s1");
    const marker = shrinkOf(b.entries, "s1");
    expect(marker.state).toBe("cancelled");
    expect(marker.cancel).toEqual({ entryId: retiring, reason: "person" });
  });

  it("a cancel for the stale reason leaves the marker stale", () => {
    const { b, markers, first, second } = workSession();
    markers.shrink({ id: "s1", target: { by_tool_call_id: "call_1" }, replacement: "short", pinnedEntryId: first.result });
    markers.rewind({ id: "r1", granularity: "last_tool_call_group", hideEntryIds: [second.assistant, second.result] });
    const staleCancel = markers.cancel("s1", "stale");
    markers.cancel("r1", "cap");
    const state = readControls(b.entries);
    expect(state.markers.map((m) => [m.id, m.state, m.cancel])).toEqual([
      ["s1", "stale", { entryId: staleCancel, reason: "stale" }],
      ["r1", "cancelled", { entryId: b.lastId, reason: "cap" }],
    ]);
  });

  it("markers it cannot read are listed with their problem, never thrown, and the readable ones still count", () => {
    const { b, markers, second } = workSession();
    const envelope = { schema: "pi-mulligan", v: 1 };
    const bad: [string, unknown, RegExp][] = [
      ["mulligan:rewind", "not an object", /not an object/],
      ["mulligan:rewind", { ...envelope, schema: "someone-else", kind: "rewind", id: "x", granularity: "last_turn" }, /schema/],
      ["mulligan:rewind", { schema: "pi-mulligan", kind: "rewind", id: "x", granularity: "last_turn" }, /no version/],
      ["mulligan:rewind", { ...envelope, v: 2, kind: "rewind", id: "x", granularity: "last_turn" }, /version 2, newer/],
      ["mulligan:rewind", { ...envelope, kind: "shrink", id: "x", granularity: "last_turn" }, /kind/],
      ["mulligan:rewind", { ...envelope, kind: "rewind", id: "x", granularity: "everything" }, /granularity "everything" is unknown/],
      ["mulligan:rewind", { ...envelope, kind: "rewind", granularity: "last_turn" }, /no id/],
      ["mulligan:shrink", { ...envelope, kind: "shrink", id: "y", target: { by_line: 3 }, replacement: "r" }, /target names nothing/],
      ["mulligan:shrink", { ...envelope, kind: "shrink", id: "y", target: { by_tool_call_id: "call_1" } }, /no replacement/],
      ["mulligan:cancel", { ...envelope, kind: "cancel" }, /names no marker/],
      ["mulligan:turn-metric", { ...envelope, v: 9, kind: "turn-metric" }, /newer/],
    ];
    const badIds = bad.map(([customType, data]) => b.custom(customType, data).lastId);
    markers.rewind({ id: "good", granularity: "last_tool_call_group", hideEntryIds: [second.assistant, second.result] });
    const state = readControls(b.entries);
    expect(state.markers.map((m) => m.id)).toEqual(["good"]);
    expect(state.unreadable.map((u) => u.entryId)).toEqual(badIds);
    state.unreadable.forEach((u, i) => {
      expect(u.customType).toBe(bad[i]![0]);
      expect(u.problem).toMatch(bad[i]![2]);
    });
  });

  it("checkpoints come from the newest label of each entry: a label cleared or replaced later is no checkpoint", () => {
    const b = new SessionBuilder().user("one");
    const one = b.lastId;
    b.assistant("two");
    const two = b.lastId;
    b.assistant("three");
    const three = b.lastId;
    b.label(three, "mulligan:checkpoint:replaced");
    b.label(one, "mulligan:checkpoint:cleared");
    b.label(two, "mulligan:checkpoint:kept");
    b.label(one, undefined);
    b.label(three, "a bookmark of the person's");
    b.label(one, "not-a-checkpoint");
    const keptLabel = b.entries.find((e) => e.type === "label" && (e as { label?: string }).label === "mulligan:checkpoint:kept")!.id;
    b.label(three, "mulligan:checkpoint:newest");
    expect(readControls(b.entries).checkpoints).toEqual([
      { name: "kept", labelEntryId: keptLabel, targetEntryId: two },
      { name: "newest", labelEntryId: b.lastId, targetEntryId: three },
    ]);
  });
});

describe("readControls: markers written without entry ids", () => {
  it("a rewind is resolved from its granularity where it was written, so later work never slides under it", () => {
    const { b, markers, first, second } = workSession();
    b.assistant({ toolCalls: [{ name: "mulligan_rewind", args: {}, id: "rw" }] });
    markers.rewind({ id: "r1", granularity: "last_tool_call_group", excludeToolCallId: "rw", hideEntryIds: [] });
    b.toolResult("rw", "mulligan_rewind", "rewound");
    b.toolUse("read", { path: "c.ts" }, "contents of c");
    const rewind = rewindOf(b.entries, "r1");
    expect(rewind.pinned).toBe(false);
    expect(rewind.hiddenEntryIds).toEqual([second.assistant, second.result]);
    expect(rewind.hiddenEntryIds).not.toContain(first.result);
  });

  it("a last_turn rewind leaves the prompt and the earlier turns", () => {
    const { b, markers } = workSession();
    b.assistant("done");
    b.user("now the docs");
    b.toolUse("read", { path: "README.md" }, "readme");
    const readme = [b.entries.at(-2)!.id, b.lastId];
    b.assistant("I will rewrite it");
    const reply = b.lastId;
    b.assistant({ toolCalls: [{ name: "mulligan_rewind", args: {}, id: "rw" }] });
    markers.rewind({ id: "r1", granularity: "last_turn", excludeToolCallId: "rw" });
    expect(rewindOf(b.entries, "r1").hiddenEntryIds).toEqual([...readme, reply]);
  });

  it("a checkpoint rewind goes back to the checkpoint as it was labelled, even after the rewind cleared the label", () => {
    const { b, markers, first } = workSession();
    b.label(first.result, CHECKPOINT_LABEL);
    b.toolUse("read", { path: "c.ts" }, "contents of c");
    b.assistant({ toolCalls: [{ name: "mulligan_rewind", args: {}, id: "rw" }] });
    markers.rewind({ id: "r1", granularity: "checkpoint", checkpoint: "before-refactor", excludeToolCallId: "rw" });
    b.toolResult("rw", "mulligan_rewind", "rewound");
    b.label(first.result, undefined); // pi-mulligan consumes the checkpoint
    const state = readControls(b.entries);
    expect(state.checkpoints).toEqual([]);
    const hidden = (state.markers[0] as RewindMarker).hiddenEntryIds;
    const after = b.entries.filter((e) => e.type === "message").map((e) => e.id);
    const expected = after.slice(after.indexOf(first.result) + 1, after.indexOf(first.result) + 5);
    expect(hidden).toEqual(expected);
  });

  it("a checkpoint rewind whose checkpoint was never set hides nothing", () => {
    const { b, markers } = workSession();
    markers.rewind({ id: "r1", granularity: "checkpoint", checkpoint: "never-set" });
    expect(rewindOf(b.entries, "r1").hiddenEntryIds).toEqual([]);
    expect(rewindOf(b.entries, "r1").hidden.size).toBe(0);
  });

  it("a shrink is resolved where it was written: `last` is the newest result then, not a later one", () => {
    const { b, markers, second } = workSession();
    markers.shrink({ id: "s1", target: { by_tool_name: "read", occurrence: "last" }, replacement: "b.ts: one line" });
    b.toolUse("read", { path: "c.ts" }, "contents of c");
    const shrink = shrinkOf(b.entries, "s1");
    expect(shrink.targetEntryId).toBe(second.result);
    expect(shrink.targetKey).toBe(keyOfEntry(b.entries, second.result));
  });

  it("a later shrink by content does not match what an earlier shrink already replaced", () => {
    const { b, markers, second } = workSession();
    b.toolUse("read", { path: "a-copy.ts" }, "contents of a, copied");
    const copy = b.lastId;
    markers.shrink({ id: "s1", target: { by_tool_name: "read", occurrence: "first" }, replacement: "a.ts is one line" });
    markers.shrink({ id: "s2", target: { by_content_includes: "contents of a" }, replacement: "a copy of a.ts" });
    expect(shrinkOf(b.entries, "s2").targetEntryId).toBe(copy);
    expect(shrinkOf(b.entries, "s2").targetEntryId).not.toBe(second.result);
  });
});

describe("readControls on sessions pi-mulligan wrote", () => {
  it("the fixtures are sessions Pi 1.6 reads: its context builder gives the messages ours does, plus the system prompt on 1.6", () => {
    for (const [session, systemMessages] of [[mulliganSessionOnPi084(), 0], [mulliganSessionOnPi16(), 1], [mulliganSessionOnPi16({ pinned: false }), 1]] as const) {
      const entries = session.builder.entries;
      const pi = buildSessionProjection(entries as unknown as PiSessionEntry[], session.builder.leafId).messages as AgentMessage[];
      expect(pi.filter((m) => m.role === "system")).toHaveLength(systemMessages);
      expect(pi.filter((m) => m.role !== "system")).toStrictEqual(buildPiContext(entries).map((c) => c.message));
    }
  });

  const messagesOf = (entries: AnyEntry[], ids: string[]): AgentMessage[] => ids.map((id) => buildPiContext(entries).find((c) => c.entryId === id)!.message);

  it("Pi 0.84: the rewind hides the wrong read, the test-log shrink applies, the grep shrink is cancelled", () => {
    const { builder, ids } = mulliganSessionOnPi084();
    const state = readControls(builder.entries);
    expect(state.markers.map((m) => m.state)).toEqual(["active", "active", "cancelled"]);
    expect([...(state.markers[1] as RewindMarker).hidden]).toEqual(messagesOf(builder.entries, [ids.wrongRead.assistant, ids.wrongRead.result]).map(messageKey));
  });

  it("Pi 1.6: the system entry shifts nothing; the same span is hidden, and pi-mulligan's own stale guard retired the test-log shrink", () => {
    const { builder, ids } = mulliganSessionOnPi16();
    expect(builder.entries.find((e) => e.type === "message")).toMatchObject({ id: ids.system, message: { role: "system" } });
    const state = readControls(builder.entries);
    const rewind = state.markers[1] as RewindMarker;
    expect(rewind.pinned).toBe(true);
    expect([...rewind.hidden]).toEqual(messagesOf(builder.entries, [ids.wrongRead.assistant, ids.wrongRead.result]).map(messageKey));
    expect(rewind.noteKey).toBe(keyOfEntry(builder.entries, ids.rewindWrongRead.note));
    expect(state.markers[0]).toMatchObject({ id: MULLIGAN_MARKER_UUIDS.shrinkTestLog, state: "cancelled", cancel: { entryId: ids.staleCancel } });
    expect(state.markers[2]).toMatchObject({ id: MULLIGAN_MARKER_UUIDS.shrinkGrep, state: "cancelled", cancel: { entryId: ids.cancelShrinkGrep.marker } });
  });

  it("Pi 1.6 with no entry ids in the markers: the spans are resolved by identity, not by counting entries", () => {
    const { builder, ids } = mulliganSessionOnPi16({ pinned: false });
    const state = readControls(builder.entries);
    const rewind = state.markers[1] as RewindMarker;
    expect(rewind.pinned).toBe(false);
    expect(rewind.data.hideEntryIds).toBeUndefined();
    expect(rewind.hiddenEntryIds).toEqual([ids.wrongRead.assistant, ids.wrongRead.result]);
    const hidden = messagesOf(builder.entries, rewind.hiddenEntryIds);
    expect(hidden.map((m) => m.role)).toEqual(["assistant", "toolResult"]);
    expect(hidden[1]).toMatchObject({ toolCallId: ids.wrongRead.callId });
    expect(state.markers[0]).toMatchObject({ state: "active", targetEntryId: ids.testRun.result, targetKey: keyOfEntry(builder.entries, ids.testRun.result) });
    expect(state.markers[2]).toMatchObject({ state: "cancelled", targetEntryId: ids.grep.result });
  });
});

describe("ControlsReader", () => {
  it("gives back the same state while the control entries stay the same, and a new one after a new marker, label or compaction", () => {
    const { b, markers, first, second } = workSession();
    const reader = new ControlsReader();
    markers.shrink({ id: "s1", target: { by_tool_call_id: "call_1" }, replacement: "a.ts", pinnedEntryId: first.result });
    const state = reader.read(b.entries);
    expect(state.markers.map((m) => m.id)).toEqual(["s1"]);
    b.toolUse("read", { path: "c.ts" }, "contents of c").assistant("done").user("more");
    expect(reader.read(b.entries)).toBe(state);
    expect(reader.read(structuredClone(b.entries))).toBe(state);
    expect(reader.current()).toBe(state);

    markers.rewind({ id: "r1", granularity: "last_tool_call_group", hideEntryIds: [second.assistant, second.result] });
    const afterRewind = reader.read(b.entries);
    expect(afterRewind).not.toBe(state);
    expect(afterRewind.markers.map((m) => m.id)).toEqual(["s1", "r1"]);

    b.label(first.result, "mulligan:checkpoint:here");
    const afterLabel = reader.read(b.entries);
    expect(afterLabel).not.toBe(afterRewind);
    expect(afterLabel.checkpoints.map((c) => c.name)).toEqual(["here"]);

    // Pi's compaction cuts the shrunk result away: the shrink's target is no longer in the context.
    b.compaction({ firstKeptEntryId: second.assistant });
    const afterCompaction = reader.read(b.entries);
    expect(afterCompaction).not.toBe(afterLabel);
    expect((afterCompaction.markers[0] as ShrinkMarker).targetKey).toBeUndefined();
  });

  it("another branch of the same length is read afresh: its markers, not the previous branch's", () => {
    const { b, markers, first } = workSession();
    const common = b.entries.slice();
    markers.shrink({ id: "s1", target: { by_tool_call_id: "call_1" }, replacement: "a.ts", pinnedEntryId: first.result });
    const withShrink = b.entries.slice();
    const other = [...common, { type: "custom", id: "other-1", parentId: common.at(-1)!.id, timestamp: new Date(0).toISOString(), customType: "note-of-another-extension", data: {} } as AnyEntry];
    expect(other).toHaveLength(withShrink.length);
    const reader = new ControlsReader();
    expect(reader.read(withShrink).markers.map((m) => m.id)).toEqual(["s1"]);
    expect(reader.read(other).markers).toEqual([]);
    expect(reader.read(withShrink).markers.map((m) => m.id)).toEqual(["s1"]);
  });

  it("a branch without markers reads as nothing, the same object every time", () => {
    const b = new SessionBuilder().user("hi").assistant("hello");
    const reader = new ControlsReader();
    const state = reader.read(b.entries);
    expect(state.markers).toEqual([]);
    b.user("again");
    expect(reader.read(b.entries)).toBe(state);
  });
});
