// The line scanner every pass over a session file uses: lines split across reads of any size come
// out whole, a scan of a byte range reads nothing past it, and a sink can stop the scan.
import { describe, expect, it } from "vitest";
import { LineSplitter, scanLines, type LineSink } from "../../../core/src/session/line-scan.ts";
import { memorySessionStorage } from "../../../core/src/session/session-file-storage.ts";

const TEXT = "first\n\nthe third line, longer than a read\nfourth\nfifth";

/** Collects each line as text (null for one over the limit, with its length); stops at `stopAt`. */
function collector(stopAt?: string): LineSink & { lines: (string | number)[] } {
  const lines: (string | number)[] = [];
  return {
    lines,
    line(bytes, start, end) {
      const text = bytes ? bytes.toString("utf8", start, end) : end - start;
      lines.push(text);
      return text === stopAt;
    },
  };
}

async function scan(options: { maxReadBytes?: number; chunkBytes?: number; from?: number; end?: number; maxLineBytes?: number; stopAt?: string }) {
  const reads: { position: number; length: number }[] = [];
  const storage = memorySessionStorage(new Map([["f", TEXT]]), { maxReadBytes: options.maxReadBytes, beforeRead: (_, position, length) => reads.push({ position, length }) });
  const file = await storage.open("f");
  const sink = collector(options.stopAt);
  const splitter = new LineSplitter(sink, options.maxLineBytes ?? Infinity);
  let chunks = 0;
  const stopped = await scanLines(file, options.from ?? 0, splitter, { chunkBytes: options.chunkBytes ?? 8, end: options.end, between: async () => void chunks++ });
  return { lines: sink.lines, unended: splitter.takeUnended(), stopped, reads, chunks };
}

describe("line scanner", () => {
  it("gives the same lines whatever the size of the reads, the last one left unended", async () => {
    for (const [chunkBytes, maxReadBytes] of [[1 << 20, undefined], [8, undefined], [8, 3], [1, undefined]] as const) {
      const { lines, unended, stopped, chunks } = await scan({ chunkBytes, maxReadBytes });
      expect(lines).toEqual(["first", "", "the third line, longer than a read", "fourth"]);
      expect(unended?.bytes?.toString()).toBe("fifth");
      expect(stopped).toBe(false);
      // The hook runs after each chunk.
      expect(chunks).toBe(Math.ceil(TEXT.length / Math.min(chunkBytes, maxReadBytes ?? chunkBytes)));
    }
  });

  it("counts a line over the limit without its bytes", async () => {
    const { lines } = await scan({ maxLineBytes: 10 });
    expect(lines).toEqual(["first", "", 34, "fourth"]);
  });

  it("reads only the range asked for, and stops when the sink says so", async () => {
    const from = TEXT.indexOf("\n") + 1;
    const end = TEXT.indexOf("fourth");
    const ranged = await scan({ from, end });
    expect(ranged.lines).toEqual(["", "the third line, longer than a read"]);
    expect(ranged.unended).toBeUndefined();
    expect(ranged.reads.length).toBeGreaterThan(0);
    for (const r of ranged.reads) expect(r.position >= from && r.position + r.length <= end).toBe(true);

    const stopped = await scan({ stopAt: "" });
    expect(stopped.stopped).toBe(true);
    expect(stopped.lines).toEqual(["first", ""]);
  });
});
