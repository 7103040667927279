// The session reader and withBodies on in-memory files: what is awkward to arrange with real ones
// (a file that changes between two reads of one call, reads that return fewer bytes than asked).
import { describe, expect, it } from "vitest";
import { BodyCache, withBodies } from "../../../core/src/session/lazy-bodies.ts";
import { memorySessionStorage } from "../../../core/src/session/session-file-storage.ts";
import { parseSessionText, readSessionFile, readSessionTail } from "../../../core/src/session/session-reader.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

const PATH = "/sessions/s.jsonl";

function ids(data: { entries: { id: string }[] }): string[] {
  return data.entries.map((entry) => entry.id);
}


/** A session with long tool outputs, so a lazy read leaves their bodies in the file. */
function sessionWithBodies(): SessionBuilder {
  const b = new SessionBuilder();
  b.user("look at the sources");
  for (const name of ["a", "b", "c"]) b.toolUse("read", { path: `src/${name}.ts` }, `${name}.ts: ${"export const x = 1;\n".repeat(200)}`);
  return b.assistant("done");
}

describe("reads that return fewer bytes than asked", () => {
  it("a whole file read a few bytes at a time is the file read in one piece", async () => {
    const text = sessionWithBodies().toJsonl() + '{"type":"custom","id":"torn"';
    const storage = memorySessionStorage(new Map([[PATH, text]]), { maxReadBytes: 7 });
    const data = await readSessionFile(PATH, { storage });
    expect(data).toEqual(parseSessionText(text));
    expect(data.errors).toEqual([{ line: 10, message: expect.stringContaining("last line is cut off") }]);
  });

  it("a tail read with short reads returns only what was appended (a short read of the beginning is not a replaced file)", async () => {
    const b = sessionWithBodies();
    const files = new Map([[PATH, b.toJsonl()]]);
    const data = await readSessionFile(PATH, { storage: memorySessionStorage(files) });
    const before = b.entries.length;
    b.user("again").assistant("sure");
    files.set(PATH, b.toJsonl());
    const tail = await readSessionTail(PATH, data, { storage: memorySessionStorage(files, { maxReadBytes: 100 }) });
    expect(tail.reset).toBe(false);
    expect(ids(tail)).toEqual(b.entries.slice(before).map((entry) => entry.id));
    expect(data).toEqual(parseSessionText(b.toJsonl()));
  });

  it("bodies read back with short reads are every body, not a refusal", async () => {
    const text = sessionWithBodies().toJsonl();
    const files = new Map([[PATH, text]]);
    const lazy = await readSessionFile(PATH, { lazyBodies: true, storage: memorySessionStorage(files) });
    expect(lazy.elided?.size).toBe(3);
    const full = await withBodies(PATH, lazy.elided, lazy.entries, memorySessionStorage(files, { maxReadBytes: 64 }));
    expect(full).toEqual(parseSessionText(text).entries);
  });
});

describe("a file that changes between reads", () => {
  it("shrunk between two tail reads: the tail reader starts over and says so", async () => {
    const b = new SessionBuilder().user("q1").assistant("a1").user("q2").assistant("a2");
    const files = new Map([[PATH, b.toJsonl()]]);
    const storage = memorySessionStorage(files);
    const data = await readSessionFile(PATH, { storage });
    const held = data.entries;
    const shorter = new SessionBuilder({ sessionId: "other" }).user("only this");
    files.set(PATH, shorter.toJsonl());
    const tail = await readSessionTail(PATH, data, { storage });
    expect(tail.reset).toBe(true);
    expect(ids(tail)).toEqual(ids(shorter));
    expect(data).toEqual(parseSessionText(shorter.toJsonl()));
    expect(data.entries).toBe(held);
  });

  it("replaced by a longer file with another beginning: the tail reader starts over", async () => {
    const files = new Map([[PATH, new SessionBuilder().user("q1").toJsonl()]]);
    const storage = memorySessionStorage(files);
    const data = await readSessionFile(PATH, { storage });
    const replacement = new SessionBuilder({ sessionId: "other" }).user("another question").assistant("a").user("and more").assistant("b");
    files.set(PATH, replacement.toJsonl());
    const tail = await readSessionTail(PATH, data, { storage });
    expect(tail.reset).toBe(true);
    expect(data.header?.id).toBe("other");
    expect(data).toEqual(parseSessionText(replacement.toJsonl()));
  });

  it("cut short after the size check of a tail read: that read finds nothing, the next one starts over", async () => {
    const b = new SessionBuilder().user("q1").assistant("a1");
    const files = new Map([[PATH, b.toJsonl()]]);
    const data = await readSessionFile(PATH, { storage: memorySessionStorage(files) });
    const before = b.entries.length;
    b.user("q2").assistant("a2");
    files.set(PATH, b.toJsonl());
    const cut = new SessionBuilder().user("q1").toJsonl();
    // The tail reader has checked the size and the beginning; then the file is rewritten shorter.
    const cutWhileReading = memorySessionStorage(files, {
      beforeRead: (path, position) => {
        if (position === data.bytes) files.set(path, cut);
      },
    });
    expect(await readSessionTail(PATH, data, { storage: cutWhileReading })).toEqual({ entries: [], errors: [], reset: false });
    expect(data.entries).toHaveLength(before);

    const next = await readSessionTail(PATH, data, { storage: memorySessionStorage(files) });
    expect(next.reset).toBe(true);
    expect(data).toEqual(parseSessionText(cut));
  });

  it("rewritten in the middle of a tail read: the next tail read gives exactly the new file", async () => {
    const b = new SessionBuilder().user("q1").assistant("a1");
    const files = new Map([[PATH, b.toJsonl()]]);
    const data = await readSessionFile(PATH, { storage: memorySessionStorage(files) });
    b.user("q2").assistant("a2");
    files.set(PATH, b.toJsonl());
    const rewritten = new SessionBuilder({ sessionId: "other" }).user("a different first question, longer").assistant("x".repeat(400)).toJsonl();
    const rewriteWhileReading = memorySessionStorage(files, {
      beforeRead: (path, position) => {
        if (position === data.bytes) files.set(path, rewritten);
      },
    });
    await readSessionTail(PATH, data, { storage: rewriteWhileReading });
    // Whatever that read picked up from the middle of the new file, the next one notices the new beginning.
    const next = await readSessionTail(PATH, data, { storage: memorySessionStorage(files) });
    expect(next.reset).toBe(true);
    expect(data).toEqual(parseSessionText(rewritten));
  });

  it("a missing file is refused with ENOENT, as on disk", async () => {
    await expect(readSessionFile("/nowhere.jsonl", { storage: memorySessionStorage(new Map()) })).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("bodies read back after the file changed", () => {
  async function lazyRead(text: string) {
    const files = new Map([[PATH, text]]);
    const storage = memorySessionStorage(files);
    return { files, storage, lazy: await readSessionFile(PATH, { lazyBodies: true, storage }) };
  }

  it("lines moved by a line written before them: refused, naming the file and the entry", async () => {
    const b = sessionWithBodies();
    const { files, storage, lazy } = await lazyRead(b.toJsonl());
    const [header, ...rest] = b.toJsonl().split("\n");
    files.set(PATH, [header, JSON.stringify({ type: "custom", id: "inserted", parentId: null, customType: "x" }), ...rest].join("\n"));
    const firstElided = [...lazy.elided!.keys()][0]!;
    await expect(withBodies(PATH, lazy.elided, lazy.entries, storage)).rejects.toThrow(
      `${PATH} changed since it was read: entry "${firstElided}" is no longer where it was; read the session again`,
    );
  });

  it("a line whose bytes now hold another entry of the same length: refused", async () => {
    const b = sessionWithBodies();
    const text = b.toJsonl();
    const { files, storage, lazy } = await lazyRead(text);
    const [id] = [...lazy.elided!.keys()];
    const other = id!.replace(/.$/, (c) => (c === "z" ? "y" : "z"));
    files.set(PATH, text.replace(`"id":"${id}"`, `"id":"${other}"`));
    await expect(withBodies(PATH, lazy.elided, lazy.entries, storage)).rejects.toThrow(`entry "${id}" is no longer where it was`);
  });

  it("a file cut short before its last body: refused, not read as a partial entry", async () => {
    const b = sessionWithBodies();
    const text = b.toJsonl();
    const { files, storage, lazy } = await lazyRead(text);
    const lastElided = [...lazy.elided!.entries()].at(-1)!;
    files.set(PATH, text.slice(0, lastElided[1].start + 100));
    await expect(withBodies(PATH, lazy.elided, lazy.entries, storage)).rejects.toThrow(`entry "${lastElided[0]}" is no longer where it was`);
  });

  it("a body cache reads through the storage it is given, and a second showing reads nothing", async () => {
    const text = sessionWithBodies().toJsonl();
    const files = new Map([[PATH, text]]);
    const lazy = await readSessionFile(PATH, { lazyBodies: true, storage: memorySessionStorage(files) });
    let reads = 0;
    const counting = memorySessionStorage(files, { beforeRead: () => void reads++ });
    const cache = new BodyCache();
    expect(await cache.withBodies(PATH, lazy.elided, lazy.entries, counting)).toEqual(parseSessionText(text).entries);
    expect(reads).toBeGreaterThan(0);
    reads = 0;
    files.delete(PATH);
    expect(await cache.withBodies(PATH, lazy.elided, lazy.entries, counting)).toEqual(parseSessionText(text).entries);
    expect(reads).toBe(0);
  });
});
