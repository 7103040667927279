// context_tree_query's answer is bounded by what Pi passes on, not by what the model asks for:
// each distinct ref is read once, and a spill only as far as the answer can hold.
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MAX_BYTES } from "@earendil-works/pi-coding-agent";
import { addIndexedCall, emptyIndex, recordKey, type PruneIndex } from "../../core/src/prune/prune-index.ts";
import { fileSpillStorage, memorySpillStorage } from "../../core/src/session/blobs.ts";
import type { SpillStorage, ToolCallRecord } from "../../core/src/shapes/entries.ts";
import { formatQueryResult } from "../../pi-extension/src/query-tool.ts";

function indexOf(records: ToolCallRecord[]): PruneIndex {
  const index = emptyIndex();
  records.forEach((record, i) => addIndexedCall(index, { record, key: recordKey(record), shortRef: `t${i + 1}` }));
  return index;
}

function spilledRecord(toolCallId: string, spillPath: string, resultTimestamp = 1_000): ToolCallRecord {
  return { toolCallId, toolName: "bash", args: { command: "cat big.log" }, resultText: "", isError: false, turnIndex: 0, timestamp: resultTimestamp, resultTimestamp, spillPath, resultPreview: "head" };
}

/** A spill storage on disk that counts its reads and the bytes they returned. */
function countingStorage(inner: SpillStorage) {
  const counts = { reads: 0, bytes: 0 };
  const storage: Pick<SpillStorage, "read"> = {
    async read(path, options) {
      counts.reads++;
      const read = await inner.read(path, options);
      if (read.ok) counts.bytes += Buffer.byteLength(read.text, "utf8");
      return read;
    },
  };
  return { storage, counts };
}

describe("context_tree_query on hostile requests", () => {
  const dir = mkdtempSync(join(tmpdir(), "pp-query-"));
  const sessionFile = join(dir, "2026_q1.jsonl");
  const disk = fileSpillStorage(sessionFile, "q1");
  const line = "0123456789abcdef".repeat(6) + "\n";
  const hugeText = line.repeat(Math.ceil((20 * 1024 * 1024) / line.length)); // 20 MB
  const huge = disk.write({ toolCallId: "call_huge", resultTimestamp: 1_000, resultText: hugeText });
  const other = disk.write({ toolCallId: "call_other", resultTimestamp: 2_000, resultText: "the other output\n".repeat(10) });
  const index = indexOf([spilledRecord("call_huge", huge, 1_000), spilledRecord("call_other", other, 2_000)]);

  it("the same ref a thousand times is read once, and only as far as the answer holds", async () => {
    const { storage, counts } = countingStorage(disk);
    const answer = await formatQueryResult(Array.from({ length: 1_000 }, () => "t1"), index, storage);
    expect(counts.reads).toBe(1);
    expect(counts.bytes).toBeLessThanOrEqual(DEFAULT_MAX_BYTES + 1);
    expect(answer.match(/^## t1 — bash$/gm)).toHaveLength(1);
    expect(Buffer.byteLength(answer, "utf8")).toBeLessThan(DEFAULT_MAX_BYTES + 1_000);
    expect(answer).toContain(line.trim());
  });

  it("the same call named by ref, by id and by occurrence key is read once", async () => {
    const { storage, counts } = countingStorage(disk);
    const answer = await formatQueryResult(["t2", "call_other", "`t2`", recordKey({ toolCallId: "call_other", resultTimestamp: 2_000 })], index, storage);
    expect(counts.reads).toBe(1);
    expect(answer.match(/^## t2 — bash$/gm)).toHaveLength(1);
    expect(answer).toContain("the other output");
  });

  it("once the answer is full, the outputs after it are not read and are named for another call", async () => {
    const { storage, counts } = countingStorage(disk);
    const answer = await formatQueryResult(["t1", "t2"], index, storage);
    expect(counts.reads).toBe(1);
    expect(answer).toMatch(/\[Not read, the answer being full: t2\. Ask for them in another call\.\]$/);
    expect(answer).not.toContain("the other output");
  });

  it("a huge inline output is cut to the answer's size too, and says how big it was", async () => {
    const inline = indexOf([{ ...spilledRecord("call_inline", ""), spillPath: undefined, resultText: "x".repeat(3_000_000) }]);
    const memory = memorySpillStorage();
    const answer = await formatQueryResult(["t1", "t1"], inline, memory);
    expect(memory.reads).toEqual([]);
    expect(answer).toMatch(/\n\[Output truncated: the first \d+ of 3000000 bytes shown; the rest does not fit in one answer\.\]$/);
    expect(Buffer.byteLength(answer, "utf8")).toBeLessThan(DEFAULT_MAX_BYTES + 1_000);
  });

  it("unknown refs are listed once each, before any output", async () => {
    const { storage } = countingStorage(disk);
    const answer = await formatQueryResult(["t9", "t9", "t2"], index, storage);
    expect(answer.match(/^## t9\nUnknown/gm)).toHaveLength(1);
    expect(answer.indexOf("## t9")).toBeLessThan(answer.indexOf("## t2"));
  });

  it("a spill whose file was replaced by a link out of the folder is refused, and its preview shown", async () => {
    writeFileSync(join(dir, "secret.txt"), "SECRET-KEY-MATERIAL");
    const linked = indexOf([spilledRecord("call_link", join(dir, "secret.txt"))]);
    const answer = await formatQueryResult(["t1"], linked, disk);
    expect(answer).not.toContain("SECRET-KEY-MATERIAL");
    expect(answer).toMatch(/The spilled output could not be read: .* is outside this session's blobs folder/);
  });

  it("a spill whose file is not in the blobs folder (a fork's) is given from the session's copy, cut to what the answer holds; one whose file is there, from its file", async () => {
    const asked: string[] = [];
    const line = `copied ${"x".repeat(100)}\n`;
    const copy = line.repeat(1_500); // 162,000 bytes on 1,500 lines
    const elsewhere = indexOf([spilledRecord("call_fork", join(dir, "..", "parent-blobs", "call_fork-1000.txt"))]);
    const answer = await formatQueryResult(["t1"], elsewhere, disk, undefined, undefined, (record) => (asked.push(record.toolCallId), copy));
    expect(asked).toEqual(["call_fork"]);
    expect(answer).not.toContain("could not be read");
    expect(answer).toContain(`Output:\n${line}${line}`);
    expect(answer).toMatch(/\n\[Output truncated: the first \d+ of 162000 bytes shown; the rest does not fit in one answer\.\]$/);
    expect(Buffer.byteLength(answer, "utf8")).toBeLessThan(DEFAULT_MAX_BYTES + 1_000);
    // A spill file that is there is read, and the copy not asked for.
    const read = await formatQueryResult(["t2"], index, disk, undefined, undefined, (record) => (asked.push(record.toolCallId), "NOT THIS"));
    expect(asked).toEqual(["call_fork"]);
    expect(read).toContain("the other output");
  });
});

describe("context_tree_query across branches", () => {
  const record = (toolCallId: string, path: string, resultText: string): ToolCallRecord => ({ toolCallId, toolName: "read", args: { path }, resultText, isError: false, turnIndex: 0, timestamp: 1, resultTimestamp: 1 });
  const here = indexOf([record("call_h1", "src/h1.ts", "here one"), record("call_h2", "src/h2.ts", "here two")]);
  const left = indexOf([record("call_a1", "src/a1.ts", "left one"), record("call_a2", "src/a2.ts", "left two"), record("call_a3", "src/a3.ts", "left three")]);
  const spill = memorySpillStorage();
  const branches = (summaries: { fromId: string; summary: string }[]) => ({ index: (id: string) => (id === "aaaa1111" ? left : undefined), summaries });

  it("a ref only a branch summary names is answered with that branch's output, said to be so", async () => {
    const answer = await formatQueryResult(["t3"], here, spill, () => [], branches([{ fromId: "aaaa1111", summary: "Read src/a3.ts (`t3`)" }]));
    expect(answer).toContain("Note: `t3` is not a ref of this branch; the branch summary in this context names it for another branch, where it is `aaaa1111/t3` (read src/a3.ts).");
    expect(answer).toContain("## aaaa1111/t3 — read");
    expect(answer).toContain("left three");
  });

  it("a branch ref of an entry the session lacks is unknown, and a summary's branch that cannot be named is not followed", async () => {
    const unknown = await formatQueryResult(["bbbb2222/t1"], here, spill, () => [], branches([]));
    expect(unknown).toBe("## bbbb2222/t1\nUnknown: no branch of this session ends at entry bbbb2222.");
    const strange = await formatQueryResult(["t3"], here, spill, () => [], { index: () => left, summaries: [{ fromId: "../x", summary: "`t3`" }] });
    expect(strange).toBe("## t3\nUnknown: no pruned output has this ref or tool-call id.");
  });
});
