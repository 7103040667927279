import { describe, expect, it } from "vitest";
import { MUTATION_WARNING, renderNote, validateNote } from "../../../core/src/control/note.ts";
import type { NoteInput } from "../../../core/src/control/control-entries.ts";

const GOOD: NoteInput = {
  what_happened: "An unfiltered grep -r over the repo flooded the context with 12k lines.",
  true_current_state: "The auth check lives in src/auth.ts; nothing has been edited yet.",
  next: "Run grep -rl verifyToken src to list only the files.",
};
const EMPTY_LEDGER = { readFiles: [], modifiedFiles: [], bashSideEffects: [] };

describe("validateNote", () => {
  it("accepts a real note, trimmed, as an object or as its JSON text", () => {
    expect(validateNote({ ...GOOD, next: `  ${GOOD.next}\n` })).toEqual({ ok: true, note: GOOD });
    expect(validateNote(JSON.stringify(GOOD))).toEqual({ ok: true, note: GOOD });
  });

  it.each([
    [undefined, "must be an object"],
    ["not json", "must be an object"],
    [[GOOD], "must be an object"],
    [{ ...GOOD, next: undefined }, "note.next is missing or empty"],
    [{ ...GOOD, what_happened: "   " }, "note.what_happened is missing or empty"],
    [{ ...GOOD, true_current_state: 7 }, "note.true_current_state is missing or empty"],
  ])("refuses a note that is not there: %j", (raw, reason) => {
    const check = validateNote(raw);
    expect(check.ok).toBe(false);
    expect(check.ok ? "" : check.reason).toContain(reason);
  });

  it.each(["n/a", "N/A.", "none", "-", "...", "todo", "TODO: fill this in later", "same", "see above", "idk"])("refuses the placeholder %j", (placeholder) => {
    const check = validateNote({ ...GOOD, true_current_state: placeholder });
    expect(check).toEqual({ ok: false, reason: expect.stringContaining("note.true_current_state is a placeholder") });
  });

  it("refuses a field too short to tell the resumed agent anything", () => {
    expect(validateNote({ ...GOOD, next: "retry it" })).toEqual({ ok: false, reason: expect.stringContaining("note.next is too short") });
    expect(validateNote({ ...GOOD, next: "do a b" })).toEqual({ ok: false, reason: expect.stringContaining("note.next is too short") });
    expect(validateNote({ ...GOOD, next: "Run the tests" }).ok).toBe(true);
  });

  it("refuses fields that repeat each other, whatever the case and punctuation", () => {
    const same = "The grep output was far too large to keep.";
    expect(validateNote({ what_happened: same, true_current_state: same, next: same })).toEqual({ ok: false, reason: expect.stringContaining("repeats") });
    expect(validateNote({ ...GOOD, next: GOOD.what_happened.toUpperCase().replace(/\.$/, "") })).toEqual({ ok: false, reason: "note.next repeats note.what_happened; each field answers its own question" });
  });
});

describe("renderNote", () => {
  it("a span that only read things: heading, the three fields in order, the files read, no warning", () => {
    const text = renderNote(GOOD, { ...EMPTY_LEDGER, readFiles: ["src/a.ts", "src/b.ts"] }, "last_tool_call_group", { mutationWarning: true, hiddenCount: 2 });
    expect(text.split("\n")[0]).toBe("## Rewind note (last_tool_call_group)");
    expect(text).toContain("(2 messages)");
    const order = [GOOD.what_happened, GOOD.true_current_state, "<files-read>\nsrc/a.ts\nsrc/b.ts\n</files-read>", GOOD.next].map((part) => text.indexOf(part));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(text.endsWith(`Next: ${GOOD.next}`)).toBe(true);
    expect(text).not.toContain("<files-modified>");
    expect(text).not.toContain("<side-effects>");
    expect(text).not.toContain(MUTATION_WARNING);
  });

  it("a span that changed things lists them and warns, unless the warning is off", () => {
    const ledger = { readFiles: [], modifiedFiles: ["src/a.ts"], bashSideEffects: ["rm -rf dist"] };
    const warned = renderNote(GOOD, ledger, "last_turn", { mutationWarning: true });
    expect(warned).toContain("<files-modified>\nsrc/a.ts\n</files-modified>");
    expect(warned).toContain("<side-effects>\nrm -rf dist\n</side-effects>");
    expect(warned).toContain(MUTATION_WARNING);
    expect(warned.indexOf(MUTATION_WARNING)).toBeLessThan(warned.indexOf(`Next: ${GOOD.next}`));
    expect(warned).not.toContain("<files-read>");
    expect(renderNote(GOOD, ledger, "last_turn", { mutationWarning: false })).not.toContain(MUTATION_WARNING);
  });

  it("a checkpoint rewind names its checkpoint", () => {
    expect(renderNote(GOOD, EMPTY_LEDGER, "checkpoint", { mutationWarning: true, checkpoint: "before-refactor" })).toContain('everything after checkpoint "before-refactor"');
  });
});
