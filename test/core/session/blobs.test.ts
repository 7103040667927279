import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobsDirFor, fileSpillStorage, memorySpillStorage, readSpillFile } from "../../../core/src/session/blobs.ts";

const call = (toolCallId: string, resultText: string, resultTimestamp = 1_000) => ({ toolCallId, resultText, resultTimestamp });

describe("reading a spill file", () => {
  const dir = mkdtempSync(join(tmpdir(), "pp-spill-"));
  const sessionFile = join(dir, "2026_s1.jsonl");
  const blobs = blobsDirFor(sessionFile, "s1");
  mkdirSync(blobs);
  writeFileSync(join(blobs, "ok.txt"), "the whole output");
  writeFileSync(join(dir, "secret.txt"), "not a spill");

  it("reads a sidecar inside the session's blobs folder", async () => {
    expect(await readSpillFile(sessionFile, "s1", join(blobs, "ok.txt"))).toMatchObject({ ok: true, text: "the whole output" });
  });

  it("refuses a path outside the blobs folder, also through ..", async () => {
    expect((await readSpillFile(sessionFile, "s1", "/etc/hostname")).ok).toBe(false);
    expect((await readSpillFile(sessionFile, "s1", join(blobs, "..", "2026_s1.jsonl"))).ok).toBe(false);
  });

  it("refuses a symbolic link in the blobs folder that points outside it", async () => {
    symlinkSync(join(dir, "secret.txt"), join(blobs, "link.txt"));
    const read = await readSpillFile(sessionFile, "s1", join(blobs, "link.txt"));
    expect(read).toMatchObject({ ok: false, reason: expect.stringContaining("outside this session's blobs folder") });
  });

  it("refuses a FIFO in the blobs folder at once instead of waiting for a writer", async () => {
    const fifo = join(blobs, "pipe.txt");
    execFileSync("mkfifo", [fifo]);
    const started = Date.now();
    const read = await readSpillFile(sessionFile, "s1", fifo);
    expect(read).toMatchObject({ ok: false, reason: expect.stringContaining("is not a file") });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("the session's spill storage on disk", () => {
  it("writes into the blobs folder, creating it, one file per call occurrence, and reads it back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pp-spill-"));
    const sessionFile = join(dir, "2026_s2.jsonl");
    const storage = fileSpillStorage(sessionFile, "s2");
    const first = storage.write(call("call_1", "first output", 1_000));
    const retried = storage.write(call("call_1", "retried output", 2_000));
    expect(first).toBe(join(blobsDirFor(sessionFile, "s2"), "call_1-1000.txt"));
    expect(readFileSync(first, "utf8")).toBe("first output");
    expect(readFileSync(retried, "utf8")).toBe("retried output");
    expect(await storage.read(first)).toMatchObject({ ok: true, text: "first output" });
  });

  it("a tool-call id with path characters cannot name a file outside the folder", () => {
    const dir = mkdtempSync(join(tmpdir(), "pp-spill-"));
    const sessionFile = join(dir, "2026_s3.jsonl");
    const path = fileSpillStorage(sessionFile, "s3").write(call("../../escape/x", "output"));
    expect(readdirSync(blobsDirFor(sessionFile, "s3"))).toEqual([".._.._escape_x-1000.txt"]);
    expect(path.startsWith(blobsDirFor(sessionFile, "s3"))).toBe(true);
    expect(existsSync(join(dir, "escape"))).toBe(false);
  });

  it("reads only from its own session's folder, not another session's next to it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pp-spill-"));
    const other = fileSpillStorage(join(dir, "2026_other.jsonl"), "other").write(call("call_1", "the other session's output"));
    const read = await fileSpillStorage(join(dir, "2026_mine.jsonl"), "mine").read(other);
    expect(read).toMatchObject({ ok: false, reason: expect.stringContaining("outside this session's blobs folder") });
  });

  it("a session without a file on disk cannot spill: writes throw, reads are refused", async () => {
    const storage = fileSpillStorage(undefined, undefined);
    expect(() => storage.write(call("call_1", "output"))).toThrow("this session has no directory on disk");
    expect(await storage.read("anything.txt")).toEqual({ ok: false, reason: "this session has no file on disk" });
    expect(() => fileSpillStorage("/tmp/x.jsonl", undefined).write(call("call_1", "output"))).toThrow("this session has no directory on disk");
  });
});

describe("the in-memory spill storage", () => {
  it("gives back what was written under the path it returned, and refuses any other path", async () => {
    const storage = memorySpillStorage();
    const path = storage.write(call("call_1", "big output"));
    expect(path).toContain("call_1-1000.txt");
    expect(await storage.read(path)).toEqual({ ok: true, text: "big output", path });
    expect((await storage.read("elsewhere/call_1-1000.txt")).ok).toBe(false);
  });
});
