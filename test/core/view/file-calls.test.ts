// The calls of a session that name one file, with their states.
import { describe, expect, it } from "vitest";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { callsNamingFile, rewoundEntries } from "../../../core/src/view/file-calls.ts";
import { getBranch } from "../../../core/src/session/session-reader.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

function viewWith(extra: (b: ReturnType<typeof prunedSessionBuilder>) => void) {
  const b = prunedSessionBuilder();
  extra(b);
  return buildSessionView(parseSessionText(b.toJsonl()), { config: DEFAULT_CONFIG });
}

describe("callsNamingFile", () => {
  it("finds a summarized read and its deduplicated re-read, each with its state", () => {
    const view = viewWith(() => {});
    const found = callsNamingFile(view, { absolute: "/workspace/src/a.ts", relative: "src/a.ts" });
    expect(found.map((f) => [f.call.toolCallId, f.match, f.stateText])).toEqual([
      ["c2", "path", "summarized (ref t2)"],
      ["c4", "path", "deduplicated (same output as t2)"],
    ]);
  });

  it("finds edits, writes, greps and bash commands naming the file, written relative, with ./ or absolute", () => {
    const view = viewWith((b) => {
      b.toolUse("edit", { path: "./src/a.ts", oldText: "A", newText: "B" }, "ok", { id: "e1" });
      b.toolUse("write", { path: "/workspace/src/a.ts", content: "x" }, "ok", { id: "w1" });
      b.toolUse("grep", { pattern: "A", path: "src/a.ts" }, "1:A", { id: "g1" });
      b.toolUse("bash", { command: "cat 'src/a.ts' | wc -l" }, "1", { id: "b1" });
      b.toolUse("bash", { command: "sed -n 1,5p /workspace/src/a.ts" }, "A", { id: "b2" });
    });
    const found = callsNamingFile(view, { absolute: "/workspace/src/a.ts", relative: "src/a.ts" });
    expect(found.map((f) => [f.call.toolCallId, f.match])).toEqual([
      ["c2", "path"],
      ["c4", "path"],
      ["e1", "path"],
      ["w1", "path"],
      ["g1", "path"],
      ["b1", "command"],
      ["b2", "command"],
    ]);
    expect(found.find((f) => f.call.toolCallId === "e1")!.stateText).toBe("raw");
  });

  it("a longer name holding the path, or the same name in another folder, is not the file", () => {
    const view = viewWith((b) => {
      b.toolUse("read", { path: "src/a.tsx" }, "x", { id: "n1" });
      b.toolUse("read", { path: "lib/src/a.ts" }, "x", { id: "n2" });
      b.toolUse("bash", { command: "cat src/data.ts lib/src/a.ts src/a.ts.bak" }, "x", { id: "n3" });
      b.toolUse("read", { path: "/elsewhere/src/a.ts" }, "x", { id: "n4" });
    });
    const found = callsNamingFile(view, { absolute: "/workspace/src/a.ts", relative: "src/a.ts" });
    expect(found.map((f) => f.call.toolCallId)).toEqual(["c2", "c4"]);
  });

  it("a session started in another folder does not match a relative path that means a different file there", () => {
    const view = viewWith((b) => b.toolUse("read", { path: "src/a.ts" }, "x", { id: "r9" }));
    const found = callsNamingFile({ ...view, session: { ...view.session, cwd: "/other" } }, { absolute: "/workspace/src/a.ts", relative: "src/a.ts" });
    expect(found).toEqual([]);
  });

  it("a protected read says so; `--config=build.json` names build.json; an unnamed file has no calls", () => {
    const view = viewWith(() => {});
    expect(callsNamingFile(view, { absolute: "/workspace/skills/gate/SKILL.md" }).map((f) => f.stateText)).toEqual(["protected (**/skills/**/*.md)"]);
    const withConfig = viewWith((b) => b.toolUse("bash", { command: "npm run build -- --config=build.json" }, "ok", { id: "k1" }));
    expect(callsNamingFile(withConfig, { absolute: "/workspace/build.json" }).map((f) => [f.call.toolCallId, f.stateText])).toEqual([["k1", "raw"]]);
    expect(callsNamingFile(view, { absolute: "/workspace/package.json" })).toEqual([]);
  });

  it("a spilled call's state names its ref", () => {
    const view = viewWith(() => {});
    const c3 = view.calls.find((c) => c.toolCallId === "c3")!;
    const spilled = { ...view, calls: [{ ...c3, command: "npm run build -- --config build.json" }] };
    expect(callsNamingFile(spilled, { absolute: "/workspace/build.json" }).map((f) => f.stateText)).toEqual(["spilled to disk (ref t1)"]);
  });
});

describe("calls naming a file under the agent's markers", () => {
  it("a read an active rewind hides says so, with the rewind's id; a cancelled rewind marks nothing", () => {
    const b = new SessionBuilder({ sessionId: "s-rw", cwd: "/workspace" }).user("look");
    b.toolUse("read", { path: "src/a.ts" }, "A".repeat(3000), { id: "k1" });
    const [call, result] = b.entries.slice(-2).map((e) => e.id);
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: "r1", granularity: "last_tool_call_group", hideEntryIds: [call, result], seq: 1, ts: 1 });
    b.assistant("done");
    const data = parseSessionText(b.toJsonl());
    const view = buildSessionView(data, { config: DEFAULT_CONFIG });
    const rewound = rewoundEntries(getBranch(data, view.leafId).entries);
    const found = callsNamingFile(view, { absolute: "/workspace/src/a.ts" }, rewound);
    expect(found.map((f) => f.stateText)).toEqual(["raw; in the span the agent's rewind r1 hides"]);
    // The fixture's rewind m2 of c4 was cancelled: c4 reads as deduplicated only.
    const fixture = parseSessionText(prunedSessionBuilder().toJsonl());
    const fixtureView = buildSessionView(fixture, { config: DEFAULT_CONFIG });
    const c4 = callsNamingFile(fixtureView, { absolute: "/workspace/src/a.ts" }, rewoundEntries(getBranch(fixture, fixtureView.leafId).entries)).find((f) => f.call.toolCallId === "c4");
    expect(c4?.stateText).toBe("deduplicated (same output as t2)");
  });

  it("a rewind of a turn with protected output hides nothing there: the protected read is not marked", () => {
    const b = new SessionBuilder({ sessionId: "s-rp", cwd: "/workspace" }).user("release it");
    b.toolUse("read", { path: "skills/release/SKILL.md" }, "# Release\n1. Run the gate.", { id: "k1" });
    const [call, result] = b.entries.slice(-2).map((e) => e.id);
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: "r1", granularity: "last_tool_call_group", hideEntryIds: [call, result], seq: 1, ts: 1 });
    b.assistant("done");
    const data = parseSessionText(b.toJsonl());
    const view = buildSessionView(data, { config: DEFAULT_CONFIG });
    const found = callsNamingFile(view, { absolute: "/workspace/skills/release/SKILL.md" }, rewoundEntries(getBranch(data, view.leafId).entries));
    expect(found.map((f) => f.stateText)).toEqual(["protected (**/skills/**/*.md)"]);
  });
  it("a read whose output the agent shrank says so, with the shrink's id", () => {
    const b = new SessionBuilder({ sessionId: "s-sh", cwd: "/workspace" }).user("look");
    b.toolUse("read", { path: "src/a.ts" }, "A".repeat(3000), { id: "k1" });
    const result = b.entries[b.entries.length - 1]!.id;
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "k1" }, replacement: "all A's", pinnedEntryId: result, seq: 1, ts: 1 });
    b.assistant("done");
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config: DEFAULT_CONFIG });
    expect(callsNamingFile(view, { absolute: "/workspace/src/a.ts" }).map((f) => f.stateText)).toEqual(["raw; shrunk by the agent (s1)"]);
  });
});
