import { describe, expect, it } from "vitest";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";

const config = DEFAULT_CONFIG;

describe("session view", () => {
  it("gives every tool call its state, ref and size", () => {
    const view = buildSessionView(parseSessionText(prunedSessionBuilder().toJsonl()), { config });
    const byId = Object.fromEntries(view.calls.map((c) => [c.toolCallId, c]));
    expect(byId.c1).toMatchObject({ state: "protected", shortRef: undefined, path: "skills/gate/SKILL.md" });
    expect(byId.c2).toMatchObject({ state: "summarized", shortRef: "t2", rawChars: 1200 });
    expect(byId.c3).toMatchObject({ state: "spilled", shortRef: "t1", spillPath: "/blobs/c3.txt", command: "npm run build" });
    expect(byId.c4).toMatchObject({ state: "deduped", shortRef: "t2", aliasOf: "t2" });
    expect(view.protected).toEqual([expect.objectContaining({ toolCallId: "c1", toolName: "read", path: "skills/gate/SKILL.md" })]);
    expect(view.summaries).toEqual([expect.objectContaining({ refs: ["t2"], toolCallIds: ["c2"], turnIndex: 1 })]);
    expect(view.frontier?.outcome).toBe("summarized");
  });

  it("lists the agent's rewinds, shrinks and checkpoints with their states, cancels applied", () => {
    const view = buildSessionView(parseSessionText(prunedSessionBuilder().toJsonl()), { config });
    expect(view.markers.map((m) => [m.kind, m.markerId, m.kind === "checkpoint" ? "set" : m.state])).toEqual([
      ["shrink", "m1", "active"],
      ["rewind", "m2", "cancelled"],
      ["checkpoint", "before-refactor", "set"],
    ]);
    expect(view.markers[0]).toMatchObject({ applied: false, notApplied: "its message is protected output, which is never shrunk" });
    expect(view.markers[1]).toMatchObject({ cancelReason: "person", hiddenMessages: 0 });
    expect(view.problems).toEqual([]);
  });

  it("reads another branch from its leaf: the other branch's pruning is not on it", () => {
    const b = prunedSessionBuilder();
    const firstUser = b.entries.find((e) => e.type === "message")!.id;
    b.branchFrom(firstUser).toolUse("read", { path: "other.ts" }, "other").assistant("other branch");
    const data = parseSessionText(b.toJsonl());
    const other = buildSessionView(data, { config });
    expect(other.calls.map((c) => [c.path, c.state])).toEqual([["other.ts", "raw"]]);
    expect(other.summaries).toEqual([]);
    const mainLeaf = b.entries.filter((e) => e.type === "message").find((e) => JSON.stringify(e).includes("same as before"))!.id;
    expect(buildSessionView(data, { config, leafId: mainLeaf }).summaries).toHaveLength(1);
  });

  it("a session with bad lines shows what it could read and lists the bad lines", () => {
    const lines = prunedSessionBuilder().toJsonl().split("\n");
    lines.splice(3, 0, "{not json");
    lines.splice(6, 0, '{"type":"message","id":"zz","parentId":null}');
    const view = buildSessionView(parseSessionText(lines.join("\n") + '\n{"type":"custom","id":'), { config });
    expect(view.errors.map((e) => e.line)).toEqual([4, 7, lines.length + 1]);
    expect(view.calls.length).toBeGreaterThanOrEqual(3);
  });

  it("an index entry with a missing toolCalls list is skipped and reported, not fatal", () => {
    const b = prunedSessionBuilder().custom("context-prune-index", { nope: true }).assistant("still fine");
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config });
    expect(view.problems.some((p) => p.includes("without a toolCalls list"))).toBe(true);
    expect(view.summaries).toHaveLength(1);
  });

  it("raw size counts what Pi would send, without the pruner's own summaries", () => {
    const view = buildSessionView(parseSessionText(prunedSessionBuilder().toJsonl()), { config });
    expect(view.totals.rawChars).toBeGreaterThan(80_000 + 1200 * 2);
    expect(view.totals.rawChars).toBeLessThan(80_000 + 1200 * 2 + 1_000);
  });

  it("the model sees the spill stub, the summary and stubs instead of the raw outputs", () => {
    const view = buildSessionView(parseSessionText(prunedSessionBuilder().toJsonl()), { config });
    expect(view.totals.modelChars).toBeLessThan(view.totals.rawChars / 10);
    expect(view.totals.modelChars).toBeGreaterThan(0);
  });
});
