import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobsDirFor, readSpillFile } from "../../../core/src/session/blobs.ts";

describe("reading a spill file", () => {
  const dir = mkdtempSync(join(tmpdir(), "pp-spill-"));
  const sessionFile = join(dir, "2026_s1.jsonl");
  const blobs = blobsDirFor(sessionFile, "s1");
  mkdirSync(blobs);
  writeFileSync(join(blobs, "ok.txt"), "the whole output");

  it("reads a sidecar inside the session's blobs folder", async () => {
    expect(await readSpillFile(sessionFile, "s1", join(blobs, "ok.txt"))).toMatchObject({ ok: true, text: "the whole output" });
  });

  it("refuses a path outside the blobs folder, also through ..", async () => {
    expect((await readSpillFile(sessionFile, "s1", "/etc/hostname")).ok).toBe(false);
    expect((await readSpillFile(sessionFile, "s1", join(blobs, "..", "2026_s1.jsonl"))).ok).toBe(false);
  });

  it("refuses a FIFO in the blobs folder at once instead of waiting for a writer", async () => {
    const fifo = join(blobs, "pipe.txt");
    execFileSync("mkfifo", [fifo]);
    const started = Date.now();
    const read = await readSpillFile(sessionFile, "s1", fifo);
    expect(read.ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
