// Sessions in the shapes pi-mulligan (0.1.x) really writes, for the tests that read its markers:
// the reader and the render here, the command line, the editor and the end-to-end tests.
//
// One story, written on two hosts:
//   task 1 "the add() test fails": read src/math.ts, run the tests, shrink the test log
//   (mulligan_shrink, by tool name), read a wrong file, rewind that read (mulligan_rewind,
//   last_tool_call_group) with its note, fix the file, final reply; the person then sets the
//   checkpoint `before-refactor` (a label on the last message entry, the final reply);
//   task 2 "rename add to sum": grep, shrink the grep output (by call id), cancel that shrink
//   (mulligan_cancel), final reply. A turn metric follows every turn, as pi-mulligan's turn_end
//   handler writes one.
//
// What pi-mulligan's code writes, as read from its source:
// - every marker is a `custom` entry whose data carries {schema:"pi-mulligan", v:1, kind}, a seq
//   shared by all kinds (1, 2, …) and ts; rewinds and shrinks also a uuid `id`;
// - the rewind and shrink markers are appended while their tool runs: after the assistant turn
//   that called the tool, before the tool's result;
// - the note is a `custom_message` (display true) delivered after the rewind's result, with details
//   {schema, v:1, kind:"note", rewindId} where rewindId is the rewind marker's ENTRY id;
// - a cancel names the marker's uuid (`targetId`), never an entry id, and carries no reason;
// - hideEntryIds and pinnedEntryId are entry ids, found by walking the entries Pi builds the
//   context from (buildContextEntries) alongside the messages made from them.
//
// Both start as Pi does, with a model and a thinking-level change. On Pi 1.6 a `message` entry of
// role "system" follows (the prompt, persisted as sections, and the tools it declared).
// pi-mulligan's capture walks that entry and its message together, so the ids it pins are still
// right. Its `context` filter is what breaks: it maps the branch's message entries after the last
// compaction onto the last N messages of the `context` event, and the event has no system
// message, so the walk is one entry too long and gives up. Nothing is hidden or shrunk, and three
// requests later its stale guard retires the pinned shrink with a cancel of its own.
// `pinned: false` writes the markers of a pi-mulligan from before it pinned (no hideEntryIds, no
// pinnedEntryId, and no stale guard, which only watched pinned shrinks).
import { SessionBuilder } from "./session-builder.ts";

/**
 * Writes markers onto a session as pi-mulligan does: the envelope, one seq counter shared by every
 * kind, ts the entry's time. Each method returns the new entry's id.
 */
export class MulliganMarkers {
  seq = 0;
  readonly b: SessionBuilder;
  constructor(b: SessionBuilder) {
    this.b = b;
  }

  write(customType: string, kind: string, fields: Record<string, unknown>): string {
    const data: Record<string, unknown> = { ...fields, schema: "pi-mulligan", v: 1, kind, seq: ++this.seq, ts: 0 };
    this.b.custom(customType, data);
    data.ts = Date.parse(this.b.entry(this.b.lastId).timestamp);
    return this.b.lastId;
  }

  rewind(fields: { id: string; granularity: string; excludeToolCallId?: string; hideEntryIds?: string[]; checkpoint?: string } & Record<string, unknown>): string {
    return this.write("mulligan:rewind", "rewind", { options: { protect: ["first:user", "latest:user"] }, ...fields });
  }

  shrink(fields: { id: string; target: Record<string, unknown>; replacement: string; pinnedEntryId?: string } & Record<string, unknown>): string {
    return this.write("mulligan:shrink", "shrink", fields);
  }

  /** pi-mulligan's cancels carry no reason; ours may. */
  cancel(targetId: string, reason?: string): string {
    return this.write("mulligan:cancel", "cancel", { targetId, ...(reason ? { reason } : {}) });
  }

  metric(deltaTokens: number | null, turnIndex: number): string {
    return this.write("mulligan:turn-metric", "turn-metric", { deltaTokens, bloatHit: false, bloatHits: [], grewOverThreshold: false, turnIndex });
  }

  /** The note, delivered after the rewind's result; `rewindId` is what pi-mulligan puts there: the marker's entry id. */
  note(rewindId: string, text = "Rewind\n\nWhat happened: a wrong turn.\n\nNext: try again."): string {
    this.b.customMessage("mulligan:note", text, { schema: "pi-mulligan", v: 1, kind: "note", rewindId }, { display: true });
    return this.b.lastId;
  }
}

/** Entry ids of the story's messages and markers, to assert on. */
interface MulliganStoryIds {
  /** Pi 1.6 only: the persisted system prompt. */
  system?: string;
  task1User: string;
  readMath: { assistant: string; result: string; callId: string };
  testRun: { assistant: string; result: string; callId: string };
  shrinkTestLog: { assistant: string; marker: string; result: string; callId: string };
  wrongRead: { assistant: string; result: string; callId: string };
  rewindWrongRead: { assistant: string; marker: string; result: string; note: string; callId: string };
  /** Pi 1.6 with pins: the cancel pi-mulligan's stale guard wrote for shrinkTestLog. */
  staleCancel?: string;
  fix: { assistant: string; result: string; callId: string };
  task1Final: string;
  checkpointLabel: string;
  task2User: string;
  grep: { assistant: string; result: string; callId: string };
  shrinkGrep: { assistant: string; marker: string; result: string; callId: string };
  cancelShrinkGrep: { assistant: string; marker: string; result: string; callId: string };
  task2Final: string;
}

/** The uuid `id`s of the rewind and shrink markers (what cancels and audits name). */
export const MULLIGAN_MARKER_UUIDS = {
  shrinkTestLog: "6f1d2c3a-4b5e-4c7d-8e9f-0a1b2c3d4e01",
  rewindWrongRead: "6f1d2c3a-4b5e-4c7d-8e9f-0a1b2c3d4e02",
  shrinkGrep: "6f1d2c3a-4b5e-4c7d-8e9f-0a1b2c3d4e03",
} as const;

export const CHECKPOINT_LABEL = "mulligan:checkpoint:before-refactor";

/** Distinct texts of the story's tool outputs, to find them in what the model is sent. */
export const MULLIGAN_STORY_TEXT = {
  mathSource: "export function add(a: number, b: number): number {\n  return a - b;\n}\n",
  testLogFailure: "FAIL test/math.test.ts > add > adds two numbers",
  testLogReplacement: "npm test: 1 of 12 failing: add() returns a-b (test/math.test.ts:8)",
  wrongFile: "// legacy math helpers, unused since 2023",
  grepOutput: "src/math.ts:1:export function add(\ntest/math.test.ts:8:  expect(add(2, 3)).toBe(5);",
  grepReplacement: "add( appears in src/math.ts:1 and test/math.test.ts:8",
  noteWhatHappened: "I read src/legacy/math-old.ts, which nothing imports.",
} as const;

export interface MulliganSession {
  builder: SessionBuilder;
  ids: MulliganStoryIds;
}

interface MulliganStoryOptions {
  host: "pi-0.84" | "pi-1.6";
  /** false: the markers of a pi-mulligan from before pinning. Default true. */
  pinned?: boolean;
}

/** The story as pi-mulligan writes it on Pi 0.84: no system entry, pinned markers, every marker works. */
export function mulliganSessionOnPi084(): MulliganSession {
  return mulliganStory({ host: "pi-0.84" });
}

/**
 * The story as pi-mulligan writes it on Pi 1.6, where its filter did nothing: a system entry
 * first, the same pinned markers, and the stale guard's cancel of the test-log shrink.
 * `{ pinned: false }`: the markers of an older pi-mulligan, with no entry ids at all.
 */
export function mulliganSessionOnPi16(options: { pinned?: boolean } = {}): MulliganSession {
  return mulliganStory({ host: "pi-1.6", pinned: options.pinned });
}

const padding = (line: string, lines: number) => Array.from({ length: lines }, (_, i) => `${line} ${i + 1}`).join("\n");

function mulliganStory(options: MulliganStoryOptions): MulliganSession {
  const pinned = options.pinned ?? true;
  const onPi16 = options.host === "pi-1.6";
  const b = new SessionBuilder({ sessionId: onPi16 ? "mulligan-pi-1-6" : "mulligan-pi-0-84", cwd: "/workspace/calc" });
  const markers = new MulliganMarkers(b);
  let turnIndex = 0;
  const turnEnd = (deltaTokens: number | null) => markers.metric(deltaTokens, turnIndex++);
  const call = (name: string, args: Record<string, unknown>) => {
    b.assistant({ toolCalls: [{ name, args }] });
    return { assistant: b.lastId, callId: b.lastToolCallIds[0]! };
  };
  const result = (callId: string, name: string, text: string) => {
    b.toolResult(callId, name, text);
    return b.lastId;
  };
  // pi-mulligan's stale guard, on Pi 1.6 only: a pinned shrink it never finds is retired on the third request.
  let shrinkMisses: number | undefined;
  let staleCancel: string | undefined;
  const request = () => {
    if (!onPi16 || !pinned || shrinkMisses === undefined) return;
    if (++shrinkMisses === 3) {
      staleCancel = markers.cancel(MULLIGAN_MARKER_UUIDS.shrinkTestLog);
      shrinkMisses = undefined;
    }
  };

  b.modelChange("mock", "m");
  b.raw({ type: "thinking_level_change", thinkingLevel: "off" });
  let system: string | undefined;
  if (onPi16) {
    // Pi 1.6 persists the prompt as named sections and the tools it declared; the provider's text is made from them.
    const tool = (name: string, description: string, required: string[]) => ({
      name,
      description,
      parameters: { type: "object", required, properties: Object.fromEntries(required.map((key) => [key, { type: "string" }])) },
    });
    b.system("", {
      sections: {
        preamble: "You are a coding assistant running inside pi, a coding agent harness.",
        tools: "<tools>\n- read: Read file contents\n- bash: Execute bash commands\n- edit: Make precise file edits\n- write: Create or overwrite files\n</tools>",
        cwd: "<cwd>\n/workspace/calc\n</cwd>",
      },
      toolsAdded: [
        tool("read", "Read the contents of a file.", ["path"]),
        tool("bash", "Execute a bash command in the current working directory.", ["command"]),
        tool("edit", "Edit a single file using exact text replacement.", ["path", "edits"]),
        tool("write", "Write content to a file.", ["path", "content"]),
      ],
    });
    system = b.lastId;
  }
  b.user("The add() test fails: find out why and fix it.");
  const task1User = b.lastId;

  const readCall = call("read", { path: "src/math.ts" });
  const readResult = result(readCall.callId, "read", `${MULLIGAN_STORY_TEXT.mathSource}${padding("// helper", 40)}`);
  turnEnd(null);
  request();

  const testCall = call("bash", { command: "npm test" });
  const testResult = result(testCall.callId, "bash", `${padding("PASS test/other.test.ts > case", 60)}\n${MULLIGAN_STORY_TEXT.testLogFailure}\n  expected 5, received -1`);
  turnEnd(900);
  request();

  const shrinkTarget = { by_tool_name: "bash", occurrence: "last" };
  const shrinkCall = call("mulligan_shrink", { target: shrinkTarget, replacement: MULLIGAN_STORY_TEXT.testLogReplacement, reason: "the log is mostly passing tests" });
  const shrinkMarker = markers.shrink({
    id: MULLIGAN_MARKER_UUIDS.shrinkTestLog,
    target: shrinkTarget,
    replacement: MULLIGAN_STORY_TEXT.testLogReplacement,
    reason: "the log is mostly passing tests",
    ...(pinned ? { pinnedEntryId: testResult } : {}),
  });
  const shrinkResult = result(shrinkCall.callId, "mulligan_shrink", "Shrunk the last bash result (matched). Context updated: 1 message, ~700 tokens shed.");
  turnEnd(80);
  if (onPi16 && pinned) shrinkMisses = 0;
  request();

  const wrongCall = call("read", { path: "src/legacy/math-old.ts" });
  const wrongResult = result(wrongCall.callId, "read", `${MULLIGAN_STORY_TEXT.wrongFile}\n${padding("export const legacy =", 80)}`);
  turnEnd(1100);
  request();

  const note = {
    what_happened: MULLIGAN_STORY_TEXT.noteWhatHappened,
    true_current_state: "The bug is in src/math.ts: add() subtracts. The test expects 5 for add(2, 3).",
    next: "Edit src/math.ts so add() returns a + b, then run npm test.",
  };
  const rewindCall = call("mulligan_rewind", { note, granularity: "last_tool_call_group" });
  const rewindMarker = markers.rewind({
    granularity: "last_tool_call_group",
    excludeToolCallId: rewindCall.callId,
    note,
    ledger: { readFiles: ["src/legacy/math-old.ts"], modifiedFiles: [], bashSideEffects: [] },
    ...(pinned ? { hideEntryIds: [wrongCall.assistant, wrongResult] } : {}),
    id: MULLIGAN_MARKER_UUIDS.rewindWrongRead,
  });
  const rewindResult = result(rewindCall.callId, "mulligan_rewind", "Rewound last_tool_call_group: 2 messages leave your view from the next turn on. Note left.");
  turnEnd(60);
  const noteText = [
    "Rewind (last_tool_call_group)",
    `What happened: ${note.what_happened}`,
    `True current state: ${note.true_current_state}`,
    "<files-read>\nsrc/legacy/math-old.ts\n</files-read>",
    `Next: ${note.next}`,
  ].join("\n\n");
  const noteEntry = markers.note(rewindMarker, noteText);
  request();

  const fixCall = call("edit", { path: "src/math.ts", oldText: "return a - b;", newText: "return a + b;" });
  const fixResult = result(fixCall.callId, "edit", "Successfully replaced text in src/math.ts.");
  turnEnd(40);
  request();

  b.assistant("Fixed: add() subtracted instead of adding; it returns a + b now.");
  const task1Final = b.lastId;
  turnEnd(30);

  // The person's checkpoint command labels the last message entry of the branch.
  b.label(task1Final, CHECKPOINT_LABEL);
  const checkpointLabel = b.lastId;

  b.user("Now rename add to sum everywhere.");
  const task2User = b.lastId;
  request();

  const grepCall = call("bash", { command: "grep -rn 'add(' src test" });
  const grepResult = result(grepCall.callId, "bash", `${MULLIGAN_STORY_TEXT.grepOutput}\n${padding("node_modules/x/index.js: add(", 30)}`);
  turnEnd(700);
  request();

  const grepTarget = { by_tool_call_id: grepCall.callId };
  const shrinkGrepCall = call("mulligan_shrink", { target: grepTarget, replacement: MULLIGAN_STORY_TEXT.grepReplacement });
  const shrinkGrepMarker = markers.shrink({
    id: MULLIGAN_MARKER_UUIDS.shrinkGrep,
    target: grepTarget,
    replacement: MULLIGAN_STORY_TEXT.grepReplacement,
    ...(pinned ? { pinnedEntryId: grepResult } : {}),
  });
  const shrinkGrepResult = result(shrinkGrepCall.callId, "mulligan_shrink", "Shrunk the result of that call (matched).");
  turnEnd(20);
  request();

  const cancelCall = call("mulligan_cancel", { markerId: shrinkGrepMarker });
  const cancelMarker = markers.cancel(MULLIGAN_MARKER_UUIDS.shrinkGrep);
  const cancelResult = result(cancelCall.callId, "mulligan_cancel", "Cancelled: that shrink no longer applies from the next turn on.");
  turnEnd(10);
  request();

  b.assistant("Renamed add to sum in src/math.ts and test/math.test.ts.");
  const task2Final = b.lastId;
  turnEnd(15);

  return {
    builder: b,
    ids: {
      ...(system ? { system } : {}),
      task1User,
      readMath: { assistant: readCall.assistant, result: readResult, callId: readCall.callId },
      testRun: { assistant: testCall.assistant, result: testResult, callId: testCall.callId },
      shrinkTestLog: { assistant: shrinkCall.assistant, marker: shrinkMarker, result: shrinkResult, callId: shrinkCall.callId },
      wrongRead: { assistant: wrongCall.assistant, result: wrongResult, callId: wrongCall.callId },
      rewindWrongRead: { assistant: rewindCall.assistant, marker: rewindMarker, result: rewindResult, note: noteEntry, callId: rewindCall.callId },
      ...(staleCancel ? { staleCancel } : {}),
      fix: { assistant: fixCall.assistant, result: fixResult, callId: fixCall.callId },
      task1Final,
      checkpointLabel,
      task2User,
      grep: { assistant: grepCall.assistant, result: grepResult, callId: grepCall.callId },
      shrinkGrep: { assistant: shrinkGrepCall.assistant, marker: shrinkGrepMarker, result: shrinkGrepResult, callId: shrinkGrepCall.callId },
      cancelShrinkGrep: { assistant: cancelCall.assistant, marker: cancelMarker, result: cancelResult, callId: cancelCall.callId },
      task2Final,
    },
  };
}
