// The search's read-back of one entry: found by its id in the bytes the scan noted, from a real
// file, without reading the rest of the file; a file rewritten since finds nothing.
import * as assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { readSessionFile } from "../../../core/src/session/session-reader.ts";
import { entryLineRanges, readEntryLine, type ByteRange } from "../../../vscode-extension/src/search/entry-line.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { tempDir } from "./helpers.ts";

const dir = tempDir("pi-pruner-entry-line-");
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

describe("search: reading one entry back for a snippet", () => {
  it("an output left on disk is its own line; a reply lies between the outputs around it, and is read from there alone", async () => {
    const { file, builder } = session();
    const data = await readSessionFile(file, { lazyBodies: true });
    const ranges = entryLineRanges(data);
    const [, , firstOutput, reply, nextPrompt, , lastOutput] = builder.entries.map((e) => e.id);
    const outputSpan = data.elided!.get(firstOutput!)!;
    assert.deepEqual(ranges.get(firstOutput!), { start: outputSpan.start, end: outputSpan.start + outputSpan.bytes });
    const lastSpan = data.elided!.get(lastOutput!)!;
    assert.deepEqual(ranges.get(reply!), { start: outputSpan.start + outputSpan.bytes, end: lastSpan.start });
    assert.deepEqual(ranges.get(nextPrompt!), ranges.get(reply!));

    const output = await readBack(file, ranges.get(firstOutput!)!, firstOutput!);
    assert.equal((output.entry as { message: { content: { text: string }[] } }).message.content[0]!.text, "x".repeat(5000));

    // The prompt after the reply names it as its parent: only the line whose own id it is comes back.
    const back = await readBack(file, ranges.get(reply!)!, reply!);
    assert.equal(back.entry?.id, reply);
    assert.equal((back.entry as { message: { content: { text: string }[] } }).message.content[0]!.text, "the reply that was asked for");
    const range = ranges.get(reply!)!;
    for (const r of back.reads) assert.ok(r.position >= range.start && r.position + r.length <= range.end, `read ${JSON.stringify(r)} outside ${JSON.stringify(range)}`);
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
      assert.equal(idAt - CHUNK, shift);
      const data = await readSessionFile(file, { lazyBodies: true });
      const { entry } = await readBack(file, entryLineRanges(data).get(id)!, id);
      assert.equal(entry?.id, id, `shift ${shift}`);
      assert.ok(JSON.stringify(entry).includes("w".repeat(300 * 1024)));
    }
  });

  it("a file rewritten since gives nothing back", async () => {
    const { file, builder } = session();
    const data = await readSessionFile(file, { lazyBodies: true });
    const reply = builder.entries[3]!.id;
    const range = entryLineRanges(data).get(reply)!;
    writeFileSync(file, new SessionBuilder({ sessionId: "other" }).user("something else entirely").toJsonl());
    assert.equal((await readBack(file, range, reply)).entry, undefined);
  });
});
