// A fork or clone (Pi's `--fork`, `/fork`, `/clone`, RPC `fork`/`clone`) has a new id, so its
// blobs folder is not its parent's, while its records still name the parent's spill files. Pi
// copies every entry whole into the new file, tool results included: that copy is what every
// reader gives back (context_tree_query, `pi-pruner inspect`, the editor's "can it be recovered").
// The header's `parentSession` says where the fork came from; it is the file's, so untrusted, and
// no reader follows it: the hostile values below change nothing, and nothing of theirs is read.
import { describe, expect, it } from "vitest";
import { readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileSpillStorage, readSpillFile } from "../../../core/src/session/blobs.ts";
import { getBranch, readSessionFile, type SessionData } from "../../../core/src/session/session-reader.ts";
import { PRUNE_INDEX, type AnyEntry, type IndexData, type ToolCallRecord } from "../../../core/src/shapes/entries.ts";
import { rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { spillCopyOnBranch, spillRecovery } from "../../../core/src/view/spill-recovery.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { main, type CliIO } from "../../../core/src/cli/cli.ts";
import { formatQueryResult } from "../../../pi-extension/src/query-tool.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { SECRET, fileTree as tree, untrustedScene } from "../../helpers/untrusted-scene.ts";

/** More bytes than characters (é, ✓), so a size in characters is never taken for the spill's. */
const OUTPUT = "compiled módulo ✓ in 12 ms\n".repeat(300);

/** A session whose one bash output was spilled into its blobs folder, as the pruner does it. */
function spilledSession(dir: string, id: string, output = OUTPUT) {
  const file = join(dir, `2026-12-01T09-00-00-000Z_${id}.jsonl`);
  const b = new SessionBuilder({ sessionId: id, cwd: "/proj" });
  b.user("build it");
  b.toolUse("bash", { command: "npm run build" }, output, { id: "call_1" });
  const resultTimestamp = (b.entries.at(-1) as unknown as { message: { timestamp: number } }).message.timestamp;
  const spillPath = fileSpillStorage(file, id).write({ toolCallId: "call_1", resultTimestamp, resultText: output });
  const record: ToolCallRecord = {
    toolCallId: "call_1",
    toolName: "bash",
    args: { command: "npm run build" },
    resultText: "",
    isError: false,
    turnIndex: 0,
    resultTimestamp,
    spillPath,
    spillBytes: Buffer.byteLength(output, "utf8"),
    resultPreview: output.slice(0, 40),
  };
  b.custom(PRUNE_INDEX, { toolCalls: [record], refs: [{ shortId: "t1", toolCallId: "call_1", resultTimestamp }] } satisfies IndexData);
  b.assistant("Built.");
  b.writeTo(file);
  return { file, builder: b, record };
}

/** What Pi's fork writes: a new header naming the parent, then every entry of the parent as it was. */
function forkOf(parent: SessionBuilder, dir: string, forkId: string, parentSession: unknown): string {
  const header = { type: "session", version: 3, id: forkId, timestamp: "2026-12-02T09:00:00.000Z", cwd: "/proj", parentSession };
  const file = join(dir, `2026-12-02T09-00-00-000Z_${forkId}.jsonl`);
  writeFileSync(file, [header, ...parent.entries].map((e) => JSON.stringify(e)).join("\n") + "\n");
  return file;
}

/** What each reader makes of the fork's spilled call: the query tool's answer, the recovery check (lazy bodies and not), inspect's verdict. */
async function readersOf(file: string, forkId: string) {
  const full = await readSessionFile(file);
  const lazy = await readSessionFile(file, { lazyBodies: true });
  const branch = getBranch(full).entries;
  const query = await formatQueryResult(["t1"], rebuildIndex(branch).index, fileSpillStorage(file, forkId), undefined, undefined, (record) => spillCopyOnBranch(branch, record));
  const lost = async (data: SessionData) => [...(await spillRecovery(buildSessionView(data, { config: DEFAULT_CONFIG }).calls, file, forkId, data)).values()];
  let out = "";
  const io: CliIO = { out: (t) => (out += t), err: () => undefined, env: { PI_CODING_AGENT_DIR: join(tmpdir(), "pp-no-agent") }, cwd: tmpdir() };
  expect(await main(["inspect", file, "--json"], io)).toBe(0);
  const inspect = (JSON.parse(out) as { calls: { toolCallId: string; unrecoverable: string | null }[] }).calls.find((c) => c.toolCallId === "call_1")!.unrecoverable;
  return { query, lostFull: await lost(full), lostLazy: await lost(lazy), inspect, branch };
}

describe("a fork's spilled outputs", () => {
  it("are not read from the parent's blobs folder; every reader gives the fork's own copy back", async () => {
    const s = untrustedScene("pp-fork-");
    const parent = spilledSession(s.sessionDir, "parent-1");
    const fork = forkOf(parent.builder, s.sessionDir, "fork-1", parent.file);
    // The record names the parent's spill file, outside the fork's blobs folder: refused, as before.
    expect(await readSpillFile(fork, "fork-1", parent.record.spillPath!)).toMatchObject({ ok: false, reason: expect.stringContaining("is outside this session's blobs folder") });

    const r = await readersOf(fork, "fork-1");
    expect(r.query).toContain(`Output:\n${OUTPUT}`);
    expect(r.query).not.toContain("could not be read");
    expect(r).toMatchObject({ lostFull: [], lostLazy: [], inspect: null });
  });

  it("still are once the parent and its blobs folder are deleted", async () => {
    const s = untrustedScene("pp-fork-");
    const parent = spilledSession(s.sessionDir, "parent-1");
    const fork = forkOf(parent.builder, s.sessionDir, "fork-1", parent.file);
    rmSync(parent.file);
    rmSync(join(s.sessionDir, "parent-1-blobs"), { recursive: true });
    const r = await readersOf(fork, "fork-1");
    expect(r.query).toContain(`Output:\n${OUTPUT}`);
    expect(r).toMatchObject({ lostFull: [], lostLazy: [], inspect: null });
  });

  it("a copy is taken only for the same occurrence, with exactly the spilled size in bytes", () => {
    const { builder, record } = spilledSession(untrustedScene("pp-fork-").sessionDir, "s");
    const entries = builder.entries;
    const resultEntry = entries.find((e) => e.type === "message" && (e as { message: { role: string } }).message.role === "toolResult")!;
    expect(spillCopyOnBranch(entries, record)).toBe(OUTPUT);
    const refused: [string, Partial<ToolCallRecord> | Record<string, unknown>][] = [
      ["no size recorded", { spillBytes: undefined }],
      ["the size as a string", { spillBytes: String(record.spillBytes) }],
      ["the size in characters", { spillBytes: OUTPUT.length }],
      ["one byte more", { spillBytes: record.spillBytes! + 1 }],
      ["one byte less", { spillBytes: record.spillBytes! - 1 }],
      ["not a number", { spillBytes: Number.NaN }],
      ["another result time", { resultTimestamp: record.resultTimestamp! + 1 }],
      ["another tool call", { toolCallId: "call_2" }],
    ];
    for (const [label, change] of refused) expect(spillCopyOnBranch(entries, { ...record, ...change } as ToolCallRecord), label).toBeUndefined();
    // The same text in a message that is not the tool result is no copy of it.
    const asUser = { ...resultEntry, message: { role: "user", content: [{ type: "text", text: OUTPUT }], timestamp: record.resultTimestamp } } as unknown as AnyEntry;
    expect(spillCopyOnBranch([asUser], record)).toBeUndefined();
    // A record without a result time (an old one) takes the result of that call.
    expect(spillCopyOnBranch(entries, { ...record, resultTimestamp: undefined })).toBe(OUTPUT);
  });
});

describe("the header's parentSession is never followed", () => {
  /** Values an attacker puts in a crafted fork's header, each aimed at a decoy session whose blobs folder holds the secret under the name the record gives. */
  function hostileParents(s: ReturnType<typeof untrustedScene>, decoyFile: string): [string, unknown][] {
    const link = join(s.sessionDir, "2026-12-01T00-00-00-000Z_linked.jsonl");
    symlinkSync(decoyFile, link);
    return [
      ["..", ".."],
      ["a relative path out", `../../../outside/${decoyFile.split("/").pop()}`],
      ["an absolute path elsewhere", decoyFile],
      ["a link in the sessions folder to a session elsewhere", link],
      ["the decoy's blobs folder itself", join(s.outside, "decoy-blobs")],
      ["a path with NUL", `${decoyFile}\0.jsonl`],
      ["a very long path", `/${"a/".repeat(50_000)}x.jsonl`],
      ["a number", 42],
      ["an object", { path: decoyFile }],
      ["null", null],
    ];
  }

  it("each reader gives the fork's own copy back, or without one nothing, and never anything of the decoy", async () => {
    const s = untrustedScene("pp-fork-");
    const decoy = spilledSession(s.outside, "decoy", SECRET);
    const parent = spilledSession(s.sessionDir, "parent-1");
    // The crafted record names the decoy's spill file; the fork's result is its own output.
    parent.builder.entries.forEach((e) => {
      if (e.type === "custom" && (e as { customType: string }).customType === PRUNE_INDEX) (e as unknown as { data: IndexData }).data.toolCalls![0]!.spillPath = decoy.record.spillPath;
    });
    const cases = hostileParents(s, decoy.file);
    for (const [i, [label, value]] of cases.entries()) {
      const before = tree(s.root);
      const fork = forkOf(parent.builder, s.sessionDir, `fork-${i}`, value);
      const r = await readersOf(fork, `fork-${i}`);
      expect(r.query, label).toContain(`Output:\n${OUTPUT}`);
      expect(r.query, label).not.toContain(SECRET);
      expect(r, label).toMatchObject({ lostFull: [], lostLazy: [], inspect: null });
      expect(tree(s.root).filter((p) => !p.includes(`fork-${i}`)), label).toEqual(before);
    }
    expect(readFileSync(decoy.record.spillPath!, "utf8")).toBe(SECRET);

    // With no copy of the spilled size (the record gives the secret's), nothing is recovered, with the reason.
    parent.builder.entries.forEach((e) => {
      if (e.type !== "custom" || (e as { customType: string }).customType !== PRUNE_INDEX) return;
      const record = (e as unknown as { data: IndexData }).data.toolCalls![0]!;
      record.spillPath = decoy.record.spillPath;
      record.spillBytes = SECRET.length;
    });
    for (const [i, [label, value]] of cases.entries()) {
      const fork = forkOf(parent.builder, s.sessionDir, `fork-${i}`, value);
      // Looked at as it is, and with the fork's blobs folder a link to the decoy's.
      for (const linked of [false, true]) {
        if (linked) symlinkSync(join(s.outside, "decoy-blobs"), join(s.sessionDir, `fork-${i}-blobs`));
        const r = await readersOf(fork, `fork-${i}`);
        const why = linked ? "is a symbolic link; nothing is read through it" : "is outside this session's blobs folder";
        expect(r.query, label).toContain(`[The spilled output could not be read: `);
        expect(r.query, label).toContain(why);
        expect(r.query, label).not.toContain(SECRET);
        expect(r.lostFull, label).toEqual([expect.stringContaining(why)]);
        expect(r.lostLazy, label).toEqual(r.lostFull);
        expect(r.inspect, label).toContain(why);
      }
    }
  });
});
