// The entry guards narrow an entry by its type alone: the session reader has already refused a
// known type without the fields it needs.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import {
  isBranchSummaryEntry,
  isCompactionEntry,
  isContextEditEntry,
  isCustomEntry,
  isCustomEntryOf,
  isCustomMessageEntry,
  isLabelEntry,
  isMessageEntry,
  isSessionInfoEntry,
  PRUNE_STATS,
} from "../../../core/src/shapes/entries.ts";

describe("the entry guards", () => {
  it("each says yes to its own type only, and nothing to a type a future Pi adds", () => {
    const b = new SessionBuilder().user("go").toolUse("read", { path: "a" }, "x");
    const first = b.lastId;
    b.custom(PRUNE_STATS, { callCount: 1 }).customMessage("note", "hello").label(first, "mark").branchSummary(first, "back").contextEdit(first, "edited");
    b.compaction({ firstKeptEntryId: first }).raw({ type: "session_info", name: "named" }).modelChange("p", "m");
    const entries = parseSessionText(b.toJsonl()).entries;
    const guards = { message: isMessageEntry, custom: isCustomEntry, custom_message: isCustomMessageEntry, compaction: isCompactionEntry, branch_summary: isBranchSummaryEntry, context_edit: isContextEditEntry, label: isLabelEntry, session_info: isSessionInfoEntry };
    for (const entry of entries) {
      for (const [type, guard] of Object.entries(guards)) expect(guard(entry)).toBe(entry.type === type);
    }
    expect(entries.map((e) => e.type)).toContain("model_change");
    expect(entries.filter((e) => isCustomEntryOf(e, PRUNE_STATS))).toHaveLength(1);
    expect(entries.filter((e) => isCustomEntryOf(e, "note"))).toHaveLength(0);
  });
});
