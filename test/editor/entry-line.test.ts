// The search's read-back of one entry: found by its id in the bytes the scan noted, from a real
// file, without reading the rest of the file; a file rewritten since finds nothing.
import { mkdtempSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSessionFile } from "../../core/src/session/session-reader.ts";
import { entryLineRanges, readEntryLine, type ByteRange } from "../../vscode-extension/src/search/entry-line.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-pruner-entry-line-"));
const noYield = async () => undefined;

async function readBack(file: string, range: ByteRange, id: string) {
  const handle = await open(file, "r");
  const reads: { position: number; length: number }[] = [];
  const read = handle.read.bind(handle);
  // Every read the lookup makes, to show it stays inside the range.
  handle.read = ((buffer: Buffer, offset: number, length: number, position: number) => {
    reads.push({ position, length });
    return read(buffer, offset, length, position);
  }) as typeof handle.read;
  try {
    return { entry: await readEntryLine(handle, range, id, noYield), reads };
  } finally {
    await handle.close();
  }
}

/** A session whose reply sits between two long outputs (left on disk), and whose next entry names the reply as its parent. */
function session(): { file: string; builder: SessionBuilder } {
  const builder = new SessionBuilder()
    .user("look")
    .toolUse("bash", { command: "ls" }, "x".repeat(5000))
    .assistant("the reply that was asked for")
    .user("more")
    .toolUse("bash", { command: "ls -l" }, "y".repeat(5000));
  const file = join(dir, `s-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(file, builder.toJsonl());
  return { file, builder };
}

describe("entryLineRanges and readEntryLine", () => {
  it("an output left on disk is its own line; a reply lies between the outputs around it, and is read from there alone", async () => {
    const { file, builder } = session();
    const data = await readSessionFile(file, { lazyBodies: true });
    const ranges = entryLineRanges(data);
    const [, , firstOutput, reply, nextPrompt, , lastOutput] = builder.entries.map((e) => e.id);
    const outputSpan = data.elided!.get(firstOutput!)!;
    expect(ranges.get(firstOutput!)).toEqual({ start: outputSpan.start, end: outputSpan.start + outputSpan.bytes });
    const lastSpan = data.elided!.get(lastOutput!)!;
    expect(ranges.get(reply!)).toEqual({ start: outputSpan.start + outputSpan.bytes, end: lastSpan.start });
    expect(ranges.get(nextPrompt!)).toEqual(ranges.get(reply!));

    const output = await readBack(file, ranges.get(firstOutput!)!, firstOutput!);
    expect((output.entry as { message: { content: { text: string }[] } }).message.content[0]!.text).toBe("x".repeat(5000));

    // The prompt after the reply names it as its parent: only the line whose own id it is comes back.
    const back = await readBack(file, ranges.get(reply!)!, reply!);
    expect(back.entry?.id).toBe(reply);
    expect((back.entry as { message: { content: { text: string }[] } }).message.content[0]!.text).toBe("the reply that was asked for");
    const range = ranges.get(reply!)!;
    for (const r of back.reads) expect(r.position >= range.start && r.position + r.length <= range.end).toBe(true);
  });

  it("finds an id cut by the edge of a read chunk, and a line longer than a chunk", async () => {
    const CHUNK = 256 * 1024;
    const write = (pad: number) => {
      const builder = new SessionBuilder().user("p".repeat(pad)).assistant({ toolCalls: [{ name: "write", args: { content: "w".repeat(300 * 1024) } }] });
      const file = join(dir, `chunk-${pad}.jsonl`);
      const text = builder.toJsonl();
      writeFileSync(file, text);
      return { file, id: builder.entries[1]!.id, idAt: Buffer.from(text).indexOf(`"id":"${builder.entries[1]!.id}"`) };
    };
    // Where the reply's `"id":"e2"` begins relative to the first chunk's end: the id cut in two, the
    // field's name cut from its value, both wholly in the second chunk, and no cut at all.
    for (const shift of [-7, -4, -2, 0, 3, -400]) {
      const first = write(1000);
      const { file, id, idAt } = write(1000 + CHUNK + shift - first.idAt);
      expect(idAt - CHUNK).toBe(shift);
      const data = await readSessionFile(file, { lazyBodies: true });
      const { entry } = await readBack(file, entryLineRanges(data).get(id)!, id);
      expect(entry?.id, `shift ${shift}`).toBe(id);
      expect(JSON.stringify(entry)).toContain("w".repeat(300 * 1024));
    }
  });

  it("a file rewritten since gives nothing back", async () => {
    const { file, builder } = session();
    const data = await readSessionFile(file, { lazyBodies: true });
    const reply = builder.entries[3]!.id;
    const range = entryLineRanges(data).get(reply)!;
    writeFileSync(file, new SessionBuilder({ sessionId: "other" }).user("something else entirely").toJsonl());
    expect((await readBack(file, range, reply)).entry).toBeUndefined();
  });
});
