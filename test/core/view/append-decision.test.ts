// The decision the editor takes each time Pi appends to a session file it shows.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { decideAppend, type AppendInput } from "../../../core/src/view/append-decision.ts";

/** A session e1 → e2 → e3 → e4 (user, assistant, user, assistant) with the view shown at e4. */
function shownSession() {
  const b = new SessionBuilder().user("first").assistant("one").user("second").assistant("two");
  const before = b.entries.length;
  return { b, before, shownView: { leafId: b.lastId } };
}

function input(fields: Partial<AppendInput> & Pick<AppendInput, "shownView" | "entries">): AppendInput {
  const last = fields.entries[fields.entries.length - 1];
  return { reset: false, badLines: 0, pinnedLeaf: undefined, defaultLeafId: last?.id ?? fields.shownView?.leafId ?? null, ...fields };
}

describe("decideAppend", () => {
  it("a file that was replaced is built again, the pin kept for the rebuild to check", () => {
    const { b, shownView } = shownSession();
    const decision = decideAppend(input({ reset: true, shownView, entries: b.entries, pinnedLeaf: "e2" }));
    expect(decision).toEqual({ kind: "rebuild", pinnedLeaf: "e2" });
  });

  it("a session with no view built yet is built, even when nothing new was read", () => {
    const { shownView } = shownSession();
    expect(decideAppend(input({ shownView: undefined, entries: [], defaultLeafId: shownView.leafId }))).toEqual({ kind: "rebuild", pinnedLeaf: undefined });
  });

  it("a tail read that found nothing changes nothing", () => {
    const { shownView } = shownSession();
    expect(decideAppend(input({ shownView, entries: [] }))).toEqual({ kind: "nothing-new" });
  });

  it("only unreadable lines arrived: the bad-line count changes, the view is kept", () => {
    const { shownView } = shownSession();
    expect(decideAppend(input({ shownView, entries: [], badLines: 2 }))).toEqual({ kind: "bad-lines" });
  });

  it("another branch grew while a leaf is pinned: the pinned view stays as it is", () => {
    const { b, before, shownView } = shownSession();
    b.branchFrom("e2").user("elsewhere").assistant("other branch");
    const decision = decideAppend(input({ shownView, entries: b.entries.slice(before), pinnedLeaf: shownView.leafId }));
    expect(decision).toEqual({ kind: "unchanged" });
  });

  it("an unpinned view whose file grew on another branch is built again for the file's new last entry", () => {
    const { b, before, shownView } = shownSession();
    b.branchFrom("e2").user("elsewhere");
    const decision = decideAppend(input({ shownView, entries: b.entries.slice(before) }));
    expect(decision).toEqual({ kind: "rebuild", pinnedLeaf: undefined });
  });

  it("entries that continue the shown leaf take the fast path, and a decline builds again following the last entry", () => {
    const { b, before, shownView } = shownSession();
    b.user("third").toolUse("read", { path: "a.ts" }, "contents");
    const decision = decideAppend(input({ shownView, entries: b.entries.slice(before) }));
    expect(decision).toEqual({ kind: "fast-path", pinnedLeaf: undefined, ifDeclined: { kind: "rebuild", pinnedLeaf: undefined } });
  });

  it("a pin on the branch Pi extends is dropped: after the fast path (that branch now ends at the file's last entry), and for the rebuild if it declines", () => {
    const { b, before, shownView } = shownSession();
    b.user("third").assistant("three");
    const decision = decideAppend(input({ shownView, entries: b.entries.slice(before), pinnedLeaf: shownView.leafId }));
    expect(decision).toEqual({ kind: "fast-path", pinnedLeaf: undefined, ifDeclined: { kind: "rebuild", pinnedLeaf: undefined } });
  });

  it("a pin on the grown branch moves to the branch's new tip when the file's last entry is elsewhere", () => {
    const { b, before, shownView } = shownSession();
    b.user("third").assistant("three");
    const decision = decideAppend(input({ shownView, entries: b.entries.slice(before), pinnedLeaf: shownView.leafId, defaultLeafId: "elsewhere" }));
    expect(decision).toEqual({ kind: "fast-path", pinnedLeaf: b.lastId, ifDeclined: { kind: "rebuild", pinnedLeaf: undefined } });
  });

  it("the first entry of an empty session continues its empty branch: the fast path is tried", () => {
    const b = new SessionBuilder().user("hello");
    const decision = decideAppend(input({ shownView: { leafId: null }, entries: b.entries }));
    expect(decision.kind).toBe("fast-path");
  });

  it("bad lines that come with new entries do not hide the entries", () => {
    const { b, before, shownView } = shownSession();
    b.user("third");
    expect(decideAppend(input({ shownView, entries: b.entries.slice(before), badLines: 1 })).kind).toBe("fast-path");
  });
});
