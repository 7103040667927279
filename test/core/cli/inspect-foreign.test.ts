// `pi-pruner inspect` and `view` of sessions other extensions wrote: the header names the writer and
// says the text is pi-pruner's wording with the counts that must match; chains, calls and the
// writer's diagnostics are shown as they were; a spill is found in the moved session's blobs folder.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main, type CliIO } from "../../../core/src/cli/cli.ts";
import { blobsDirFor } from "../../../core/src/session/blobs.ts";
import { CONDENSE_SESSION_ID, condenseSession } from "../../helpers/condense-sessions.ts";
import { mulliganSessionOnPi16 } from "../../helpers/mulligan-sessions.ts";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const agentDir = mkdtempSync(join(tmpdir(), "pp-agent-"));
  const io: CliIO = { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: agentDir }, cwd: tmpdir() };
  const code = await main(args, io);
  return { code, out, err };
}

/** The pi-condense session moved away from where it was written, its spill beside it under the same name. */
function writeCondense(withSpill: boolean, spillBytes?: number): { file: string; story: ReturnType<typeof condenseSession> } {
  const dir = mkdtempSync(join(tmpdir(), "pp-condense-"));
  const story = condenseSession({ oldSessionDir: "/home/alice/.pi/agent/sessions/--gone--", spillBytes });
  const file = story.builder.writeTo(join(dir, `2025-03-03_${CONDENSE_SESSION_ID}.jsonl`));
  if (withSpill) {
    const blobs = blobsDirFor(file, CONDENSE_SESSION_ID);
    mkdirSync(blobs);
    writeFileSync(join(blobs, story.spill.fileName), story.spill.text);
  }
  return { file, story };
}

describe("inspect of a session pi-condense wrote", () => {
  it("names the writer and says the render is in pi-pruner's wording, with the counts that must match", async () => {
    const { file } = writeCondense(true);
    const r = await run(["inspect", file]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^ {2}written by: pi-condense 2\.x \(recognised from its summary footer; its flush-metrics entries\)$/m);
    expect(r.out).toContain("\n  Rendered with pi-pruner's own stub and chain wording, not the writer's: the words of stubs and chain blocks differ from what was sent.\n");
    expect(r.out).toContain("\n  These counts must match what was sent: 1 result stubbed, 0 chains compressed.\n");
  });

  it("shows each chain as it was, what its block is made of, the writer's own text, and the diagnostics it concerns", async () => {
    const { file, story } = writeCondense(true);
    const r = await run(["inspect", file]);
    expect(r.out).toContain("  b1 · tools t1,t2 · sent as a block until Pi's compaction removed it\n          body: one fused summary (a summarizer call)\n          the writer's own block text: Read the parser and the README;");
    expect(r.out).toContain(`  b2 · tools t5,t6 · removed by compaction, never sent\n          body: built without a summarizer: a list of its calls (the writer's deterministic body)`);
    expect(r.out).toContain(`          writer's diagnostic ${story.ids.unresolvedB2}: chain b2 was not found in the context it was rendered for (unresolved range): nothing was compressed for it`);
    expect(r.out).toMatch(new RegExp(`Writer's diagnostics: 6\\n(.*\\n)*  ${story.ids.failedFlush} +warning flush on the agent's final reply failed: 1 batch stayed raw \\(a summarizer call or a write failed\\)\\n {17}The writer records that the flush failed, not why`));
  });

  it("names a spill without a short ref by its tool-call id, marks results sent otherwise, and finds the moved spill", async () => {
    const { file } = writeCondense(true);
    const r = await run(["inspect", file]);
    expect(r.out).toMatch(/^ {2}call_npm_test bash +compressed .*npm test\n {10}sent: removed by Pi's compaction: not sent since\n/m);
    expect(r.out).toMatch(/^ {2}t4 +context_tree_query summarized .*\n {10}sent: sent raw: recovered output in its grace window\n/m);
    expect(r.out).not.toContain("cannot be recovered");
    expect(r.out).not.toMatch(/^ {2}t7 /m);
  });

  it("a spill missing from the blobs folder is recovered from the session file's copy of the log", async () => {
    const { file } = writeCondense(false);
    expect((await run(["inspect", file])).out).not.toContain("cannot be recovered");
    const json = JSON.parse((await run(["inspect", file, "--json"])).out);
    expect(json.calls.find((c: { toolCallId: string }) => c.toolCallId === "call_npm_test")).toMatchObject({ state: "compressed", unrecoverable: null });
  });

  it("a spill missing from the blobs folder, the session file holding no copy of its size, cannot be recovered, and says why (--json too)", async () => {
    const { file, story } = writeCondense(false, Buffer.byteLength(condenseSession().spill.text, "utf8") + 1);
    const text = await run(["inspect", file]);
    expect(text.out).toContain(`          cannot be recovered: its spill file cannot be read back: ${story.spill.recordedPath} is outside this session's blobs folder`);
    const json = JSON.parse((await run(["inspect", file, "--json"])).out);
    const spilled = json.calls.find((c: { toolCallId: string }) => c.toolCallId === "call_npm_test");
    expect(spilled).toMatchObject({ shortRef: null, state: "compressed", sent: { as: "not-in-context" }, unrecoverable: expect.stringContaining("which holds no file") });
    expect(json.writer).toMatchObject({ label: "pi-condense 2.x", foreign: true, rendering: { exact: false, counts: { resultsStubbed: 1, chainsCompressed: 0 } } });
    expect(json.chains.map((c: { blockId: string; state: string; withoutSummarizer: boolean }) => [c.blockId, c.state, c.withoutSummarizer])).toEqual([
      ["b1", "removed-by-compaction", false],
      ["b2", "removed-by-compaction", true],
    ]);
    expect(json.diagnostics.filter((d: { severity: string }) => d.severity === "warning").map((d: { entryId: string }) => d.entryId)).toEqual([story.ids.failedFlush, story.ids.unresolvedB1, story.ids.unresolvedB2]);
  });
});

describe("view of another writer's session", () => {
  it("the header names pi-mulligan and says its filter did nothing on Pi 1.6", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pp-mulligan-"));
    const file = mulliganSessionOnPi16().builder.writeTo(join(dir, "m.jsonl"));
    const r = await run(["view", file]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^# Written by: pi-mulligan \(recognised from markers written by its mulligan_\* tools; a note naming its rewind's entry\)$/m);
    expect(r.out).toContain("\n# pi-mulligan's context filter changed nothing on Pi 1.6");
    const last = await run(["view", file, "--request", "last"]);
    expect(last.out).toMatch(/^# Written by: pi-mulligan /m);
  });

  it("our own session's header names us and claims nothing more", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pp-ours-"));
    const file = prunedSessionBuilder().writeTo(join(dir, "s.jsonl"));
    const r = await run(["view", file]);
    expect(r.out).toMatch(/^# Written by: pi-pruner \(recognised from cancels that give a reason\)$/m);
    expect(r.out).not.toContain("wording");
  });
});
