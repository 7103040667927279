import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { MessageEntry } from "../../../core/src/shapes/entries.ts";
import { defaultLeafId, getBranch, parseSessionText, readSessionFile, readSessionTail, type SessionData } from "../../../core/src/session/session-reader.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-pruner-session-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCounter = 0;
function tempFile(content: string | Buffer): string {
  const path = join(dir, `s${++fileCounter}.jsonl`);
  writeFileSync(path, content);
  return path;
}

function ids(data: { entries: { id: string }[] }): string[] {
  return data.entries.map((entry) => entry.id);
}

function line(fields: Record<string, unknown>): string {
  return JSON.stringify(fields) + "\n";
}

const HEADER = line({ type: "session", version: 3, id: "sess", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/p" });
function entryLine(id: string, parentId: string | null, type = "custom"): string {
  return line({ type, id, parentId, timestamp: "2025-01-01T00:00:01.000Z", customType: "x", data: {} });
}

/** A forked session: e1 ← e2 ← e3 ← e4, and e2 ← e5 ← e6 (the last entry in the file). */
function forkedSession(): SessionBuilder {
  return new SessionBuilder().user("q1").assistant("a1").user("q2").assistant("a2").branchFrom("e2").user("q2 again").assistant("a2 again");
}

describe("reading a session", () => {
  it("reads the header and every entry in file order, indexed by id, counting lines and bytes", async () => {
    const session = forkedSession().user("ünïcödé ✓");
    const text = session.toJsonl();
    const fromText = parseSessionText(text);
    const fromFile = await readSessionFile(tempFile(text));
    for (const data of [fromText, fromFile]) {
      expect(data.header).toEqual(session.header);
      expect(ids(data)).toEqual(["e1", "e2", "e3", "e4", "e5", "e6", "e7"]);
      expect(data.byId.get("e3")).toEqual(session.entry("e3"));
      expect(data.errors).toEqual([]);
      expect(data.lineCount).toBe(8);
      expect(data.bytes).toBe(Buffer.byteLength(text));
    }
  });

  it("ignores blank lines and CRLF line ends, and still numbers lines as the file does", () => {
    const data = parseSessionText(HEADER + "\n   \r\n" + entryLine("a", null).replace("\n", "\r\n") + "\n" + "oops\n");
    expect(ids(data)).toEqual(["a"]);
    expect(data.errors).toEqual([{ line: 6, message: expect.stringContaining("not valid JSON") }]);
    expect(data.lineCount).toBe(6);
  });

  it("lists garbage lines by line number with a reason and reads the rest", () => {
    const lines = [
      HEADER, // 1
      entryLine("a", null), // 2
      "this is not json\n", // 3
      "[1,2]\n", // 4
      "42\n", // 5
      line({ id: "b", parentId: "a" }), // 6
      line({ type: 7, id: "b" }), // 7
      line({ type: "custom", parentId: "a", customType: "x" }), // 8
      line({ type: "message", id: "c", parentId: "a", timestamp: "t" }), // 9
      line({ type: "message", id: "c", parentId: "a", timestamp: "t", message: { content: "no role" } }), // 10
      line({ type: "custom", id: "d", timestamp: "t", customType: "x" }), // 11: no parentId
      line({ type: "custom", id: "d", parentId: "a", timestamp: "t" }), // 12: no customType
      line({ type: "compaction", id: "d", parentId: "a", timestamp: "t", summary: "s" }), // 13: no firstKeptEntryId
      line({ type: "session", version: 3, id: "again" }), // 14
      entryLine("z", "a"), // 15
    ];
    const data = parseSessionText(lines.join(""));
    expect(ids(data)).toEqual(["a", "z"]);
    expect(data.errors.map((e) => e.line)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    const messages = data.errors.map((e) => e.message);
    expect(messages[0]).toMatch(/not valid JSON/);
    expect(messages[1]).toBe("expected a JSON object, found an array");
    expect(messages[2]).toBe("expected a JSON object, found a number");
    expect(messages[3]).toBe('missing "type"');
    expect(messages[4]).toBe('"type" is a number, not a string');
    expect(messages[5]).toBe('custom entry without a string "id"');
    expect(messages[6]).toBe('message entry "c" without a "message" object');
    expect(messages[7]).toBe('message entry "c": message without a string "role"');
    expect(messages[8]).toMatch(/"parentId" must be a string or null/);
    expect(messages[9]).toBe('custom entry "d" without a string "customType"');
    expect(messages[10]).toBe('compaction entry "d" without a string "firstKeptEntryId"');
    expect(messages[11]).toBe("a session header after the first line; ignored");
  });

  it("reports a missing header and still reads the entries", () => {
    const data = parseSessionText(new SessionBuilder().user("hi").assistant("hello").toJsonl({ withHeader: false }));
    expect(data.header).toBeUndefined();
    expect(ids(data)).toEqual(["e1", "e2"]);
    expect(data.errors).toEqual([{ line: 1, message: expect.stringContaining("no session header") }]);

    const garbageFirst = parseSessionText("garbage\n" + entryLine("a", null));
    expect(garbageFirst.header).toBeUndefined();
    expect(ids(garbageFirst)).toEqual(["a"]);
    expect(garbageFirst.errors).toEqual([{ line: 1, message: expect.stringContaining("not valid JSON") }]);
  });

  it("keeps entries of types it does not know (a newer Pi)", () => {
    const data = parseSessionText(
      HEADER + line({ type: "hologram", id: "h", parentId: null, timestamp: "t", beam: [1, 2] }) + line({ type: "constructor", id: "k", parentId: "h", timestamp: "t" }),
    );
    expect(data.errors).toEqual([]);
    expect(data.entries).toEqual([
      { type: "hologram", id: "h", parentId: null, timestamp: "t", beam: [1, 2] },
      { type: "constructor", id: "k", parentId: "h", timestamp: "t" },
    ]);
  });

  it("keeps the first of two entries with the same id and reports the second", () => {
    const data = parseSessionText(HEADER + entryLine("a", null) + line({ type: "label", id: "a", parentId: null, timestamp: "t", targetId: "a" }));
    expect(data.entries).toHaveLength(1);
    expect(data.byId.get("a")?.type).toBe("custom");
    expect(data.errors).toEqual([{ line: 3, message: 'duplicate id "a": only the first entry with this id is kept' }]);
  });

  it("reports a torn last line without touching the file, and reads everything before it", async () => {
    const text = forkedSession().toJsonl() + '{"type":"message","id":"e7","parentId":"e6","message":{"role":"us';
    const path = tempFile(text);
    const before = statSync(path);
    for (const data of [parseSessionText(text), await readSessionFile(path)]) {
      expect(ids(data)).toHaveLength(6);
      expect(data.errors).toEqual([{ line: 8, message: expect.stringMatching(/^last line is cut off \(no newline at the end\): not valid JSON \(/) }]);
      // the torn line is not consumed: a later tail read picks it up once it is complete
      expect(data.lineCount).toBe(7);
      expect(data.bytes).toBe(Buffer.byteLength(text) - Buffer.byteLength(text.split("\n").at(-1) ?? ""));
    }
    expect(readFileSync(path, "utf8")).toBe(text);
    expect(statSync(path).mtimeMs).toBe(before.mtimeMs);
  });

  it("reads a last line that lacks only its newline", async () => {
    const text = HEADER + entryLine("a", null).trimEnd();
    const data = await readSessionFile(tempFile(text));
    expect(ids(data)).toEqual(["a"]);
    expect(data.errors).toEqual([]);
  });

  it("survives invalid UTF-8: inside a string it becomes U+FFFD, elsewhere the line is a BadLine", async () => {
    const bytes = Buffer.concat([
      Buffer.from(HEADER),
      Buffer.from('{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"bad-'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}\n'),
      Buffer.from([0x80, 0x81, 0x0a]),
      Buffer.from(entryLine("b", "a")),
    ]);
    const data = await readSessionFile(tempFile(bytes));
    expect(ids(data)).toEqual(["a", "b"]);
    expect(data.byId.get("a")).toMatchObject({ customType: "bad-\ufffd\ufffd\ufffd" });
    expect(data.errors).toEqual([{ line: 3, message: expect.stringContaining("not valid JSON") }]);
    expect(data.bytes).toBe(bytes.length);
  });

  it("reads in small chunks exactly as in one piece (lines and multi-byte characters split across reads)", async () => {
    const text = forkedSession().user("日本語のテキスト 🎉".repeat(20)).toJsonl() + "garbage\n" + "\n";
    const path = tempFile(text);
    const whole = parseSessionText(text);
    for (const chunkBytes of [3, 7, 64, 1000]) {
      const chunked = await readSessionFile(path, { chunkBytes });
      expect(chunked).toEqual(whole);
    }
  });

  it("ignores a leading byte-order mark", () => {
    const data = parseSessionText("\ufeff" + HEADER + entryLine("a", null));
    expect(data.header?.id).toBe("sess");
    expect(data.errors).toEqual([]);
  });

  it("reads a 50 MB single line without running out of memory", async () => {
    const size = 50 * 1024 * 1024;
    const path = join(dir, "big.jsonl");
    writeFileSync(path, HEADER);
    appendFileSync(path, '{"type":"message","id":"big","parentId":null,"timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"read","isError":false,"timestamp":1,"content":[{"type":"text","text":"');
    appendFileSync(path, Buffer.alloc(size, "x"));
    appendFileSync(path, '"}]}}\n' + entryLine("after", "big"));

    const data = await readSessionFile(path);
    expect(data.errors).toEqual([]);
    expect(ids(data)).toEqual(["big", "after"]);
    const message = (data.byId.get("big") as MessageEntry).message;
    expect(message.role === "toolResult" && message.content[0].type === "text" && message.content[0].text.length).toBe(size);
    expect(data.bytes).toBe(statSync(path).size);
  });

  it("skips and reports a line longer than maxLineBytes without holding it, then reads on", async () => {
    const long = line({ type: "custom", id: "long", parentId: null, timestamp: "t", customType: "x", data: "y".repeat(10_000) });
    const path = tempFile(HEADER + long + entryLine("after", null));
    const data = await readSessionFile(path, { maxLineBytes: 4096, chunkBytes: 1024 });
    expect(ids(data)).toEqual(["after"]);
    expect(data.errors).toEqual([{ line: 2, message: expect.stringMatching(/^line is 9\.\d KiB, longer than the 4\.0 KiB limit; skipped$/) }]);
    expect(data.bytes).toBe(statSync(path).size);
  });
});

describe("walking a branch", () => {
  const data = parseSessionText(forkedSession().toJsonl());

  it("defaults to the last entry in file order, like Pi resuming the session", () => {
    expect(defaultLeafId(data)).toBe("e6");
    expect(getBranch(data)).toEqual({ leafId: "e6", entries: [data.byId.get("e1"), data.byId.get("e2"), data.byId.get("e5"), data.byId.get("e6")], problems: [] });
  });

  it("walks root → leaf from any entry", () => {
    expect(ids(getBranch(data, "e4"))).toEqual(["e1", "e2", "e3", "e4"]);
    expect(ids(getBranch(data, "e2"))).toEqual(["e1", "e2"]);
    expect(ids(getBranch(data, "e1"))).toEqual(["e1"]);
  });

  it("gives an empty branch for an empty session, a null leaf, or an unknown leaf (reported)", () => {
    expect(defaultLeafId(parseSessionText(HEADER))).toBeNull();
    expect(getBranch(parseSessionText(HEADER))).toEqual({ leafId: null, entries: [], problems: [] });
    expect(getBranch(data, null)).toEqual({ leafId: null, entries: [], problems: [] });
    expect(getBranch(data, "nope")).toEqual({ leafId: null, entries: [], problems: ['leaf "nope" is not an entry of this session'] });
  });

  it("stops at a parentId cycle and reports it", () => {
    const cyclic = parseSessionText(HEADER + entryLine("a", "c") + entryLine("b", "a") + entryLine("c", "b") + entryLine("leaf", "c"));
    const branch = getBranch(cyclic);
    expect(ids(branch)).toEqual(["a", "b", "c", "leaf"]);
    expect(branch.problems).toEqual(['parentId cycle: "a" points back to "c"; the branch is cut there']);
    expect(getBranch(parseSessionText(HEADER + entryLine("self", "self"))).problems).toHaveLength(1);
  });

  it("ends the walk at a parent that is not in the file, and reports it", () => {
    const dangling = parseSessionText(HEADER + entryLine("a", null) + entryLine("b", "gone") + entryLine("c", "b"));
    const branch = getBranch(dangling);
    expect(ids(branch)).toEqual(["b", "c"]);
    expect(branch.problems).toEqual(['entry "b" has parentId "gone", which is not in the file; the branch starts at "b"']);
  });
});

describe("reading only what was appended", () => {
  async function start(text: string): Promise<{ path: string; data: SessionData }> {
    const path = tempFile(text);
    return { path, data: await readSessionFile(path) };
  }

  it("returns only the new entries and errors, and nothing when nothing changed", async () => {
    const { path, data } = await start(HEADER + entryLine("a", null));
    expect(await readSessionTail(path, data)).toEqual({ entries: [], errors: [], reset: false });

    appendFileSync(path, entryLine("b", "a") + "junk\n" + entryLine("c", "b"));
    const tail = await readSessionTail(path, data);
    expect(ids(tail)).toEqual(["b", "c"]);
    expect(tail.errors).toEqual([{ line: 4, message: expect.stringContaining("not valid JSON") }]);
    expect(tail.reset).toBe(false);
    expect(ids(data)).toEqual(["a", "b", "c"]);
    expect(data.byId.get("c")).toBe(tail.entries[1]);
    expect(data.lineCount).toBe(5);
    expect(data.bytes).toBe(statSync(path).size);
    expect(ids(getBranch(data))).toEqual(["a", "b", "c"]);
  });

  it("leaves a partial line alone until its newline arrives, then returns it once", async () => {
    const { path, data } = await start(HEADER + entryLine("a", null));
    const next = entryLine("b", "a");
    appendFileSync(path, next.slice(0, 20));
    const bytesBefore = data.bytes;
    expect(await readSessionTail(path, data)).toEqual({ entries: [], errors: [], reset: false });
    expect(data.bytes).toBe(bytesBefore);

    appendFileSync(path, next.slice(20));
    expect(ids(await readSessionTail(path, data))).toEqual(["b"]);
    expect(await readSessionTail(path, data)).toEqual({ entries: [], errors: [], reset: false });
    expect(ids(data)).toEqual(["a", "b"]);
  });

  it("a torn line seen by a full read becomes its entry once completed, and its BadLine goes away", async () => {
    const next = entryLine("b", "a");
    const { path, data } = await start(HEADER + entryLine("a", null) + next.slice(0, 25));
    expect(data.errors).toHaveLength(1);

    appendFileSync(path, next.slice(25));
    const tail = await readSessionTail(path, data);
    expect(tail).toEqual({ entries: [data.byId.get("b")], errors: [], reset: false });
    expect(data.errors).toEqual([]);
    expect(data.bytes).toBe(statSync(path).size);
  });

  it("a torn header becomes the header once completed", async () => {
    const { path, data } = await start(HEADER.slice(0, 30));
    expect(data.header).toBeUndefined();
    expect(data.errors).toHaveLength(1);
    appendFileSync(path, HEADER.slice(30) + entryLine("a", null));
    expect(await readSessionTail(path, data)).toEqual({ entries: [data.byId.get("a")], errors: [], reset: false });
    expect(data.header?.id).toBe("sess");
    expect(data.errors).toEqual([]);
  });

  it("a last line read without its newline is not returned again when the newline arrives", async () => {
    const { path, data } = await start(HEADER + entryLine("a", null).trimEnd());
    expect(ids(data)).toEqual(["a"]);
    appendFileSync(path, "\n" + entryLine("b", "a"));
    const tail = await readSessionTail(path, data);
    expect(ids(tail)).toEqual(["b"]);
    expect(tail.errors).toEqual([]);
    expect(ids(data)).toEqual(["a", "b"]);
  });

  it("re-reads from scratch when an entry read without its newline turns out to continue", async () => {
    const { path, data } = await start(HEADER + entryLine("a", null).trimEnd());
    appendFileSync(path, "{}\n");
    const tail = await readSessionTail(path, data);
    expect(tail.reset).toBe(true);
    expect(ids(data)).toEqual([]);
    expect(data.errors).toEqual([{ line: 2, message: expect.stringContaining("not valid JSON") }]);
  });

  it("re-reads from scratch when the file shrank", async () => {
    const { path, data } = await start(HEADER + entryLine("a", null) + entryLine("b", "a"));
    const heldEntries = data.entries;
    writeFileSync(path, HEADER + entryLine("x", null));
    const tail = await readSessionTail(path, data);
    expect(tail.reset).toBe(true);
    expect(ids(tail)).toEqual(["x"]);
    expect(ids(data)).toEqual(["x"]);
    expect(heldEntries).toBe(data.entries); // updated in place
    expect(data.byId.has("a")).toBe(false);
  });

  it("re-reads from scratch when the file was replaced by a longer one", async () => {
    const { path, data } = await start(HEADER + entryLine("a", null));
    writeFileSync(path, HEADER.replace('"sess"', '"other"') + entryLine("p", null) + entryLine("q", "p"));
    const tail = await readSessionTail(path, data);
    expect(tail.reset).toBe(true);
    expect(data.header?.id).toBe("other");
    expect(ids(tail)).toEqual(["p", "q"]);
    // and tails normally afterwards
    appendFileSync(path, entryLine("r", "q"));
    expect(await readSessionTail(path, data)).toEqual({ entries: [data.byId.get("r")], errors: [], reset: false });
  });

  it("continues from text parsed with parseSessionText", async () => {
    const text = HEADER + entryLine("a", null);
    const path = tempFile(text);
    const data = parseSessionText(text);
    appendFileSync(path, entryLine("b", "a"));
    expect(ids(await readSessionTail(path, data))).toEqual(["b"]);
  });

  it("starts with the header when the file was empty at first", async () => {
    const { path, data } = await start("");
    expect(data).toMatchObject({ entries: [], errors: [], lineCount: 0, bytes: 0 });
    appendFileSync(path, HEADER + entryLine("a", null));
    const tail = await readSessionTail(path, data);
    expect(tail).toMatchObject({ errors: [], reset: false });
    expect(data.header?.id).toBe("sess");
    expect(ids(data)).toEqual(["a"]);
  });
});
