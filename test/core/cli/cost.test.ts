// `pi-pruner cost`: what each request along a branch cost and why, and what each flush cost and
// saved, as the user runs the built command; and the cost line in `view --request N`'s header.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, lastBatch, persist } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { PRUNE_STATS } from "../../../core/src/shapes/entries.ts";

const bin = fileURLToPath(new URL("../../../pi-extension/bin/pi-pruner.js", import.meta.url));

function run(args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "pp-cost-"));
  const r = spawnSync(process.execPath, [bin, ...args, "--cwd", dir], { cwd: dir, env: { ...process.env, PI_CODING_AGENT_DIR: join(dir, "agent") }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Gives the answer just appended Anthropic's model and, when given, the provider's usage. */
function anthropic(b: SessionBuilder, usage?: { input: number; cacheRead: number; cacheWrite: number }): void {
  const message = (b.entry(b.lastId) as unknown as { message: Record<string, unknown> }).message;
  Object.assign(message, { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-6" });
  if (usage) message.usage = { ...usage, output: 20, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}

/**
 * Five requests: a read (1), its answer (2), a flush that stubs the read, then a request the
 * provider says rewrote the cache (3), Pi's compaction and a request that rewrote it again (4), and
 * a last request the provider gave no usage for (5).
 */
async function session(): Promise<string> {
  const b = new SessionBuilder();
  b.user("look at x");
  b.assistant({ toolCalls: [{ name: "read", args: { path: "src/x.ts" } }] });
  anthropic(b, { input: 10, cacheRead: 0, cacheWrite: 4000 });
  b.toolResult(b.lastToolCallIds[0]!, "read", big("X", 6000));
  const batch = lastBatch(b, DEFAULT_CONFIG);
  b.assistant("x is fine");
  anthropic(b, { input: 10, cacheRead: 4010, cacheWrite: 1500 });
  persist(b, (await flushBatches([batch], emptyIndex(), DEFAULT_CONFIG, echoSummarizer)).entries);
  b.custom(PRUNE_STATS, { callCount: 1, totalInputTokens: 100, totalOutputTokens: 20, totalCost: 0.001 });
  b.user("and y?");
  b.assistant("y too");
  anthropic(b, { input: 10, cacheRead: 200, cacheWrite: 1500 });
  b.compaction({ firstKeptEntryId: b.lastId, summary: "we looked at x and y" });
  b.user("and z?");
  b.assistant("z as well");
  anthropic(b, { input: 10, cacheRead: 0, cacheWrite: 2000 });
  b.user("thanks");
  b.assistant("you are welcome");
  anthropic(b);
  return b.writeTo(join(mkdtempSync(join(tmpdir(), "pp-cost-s-")), "s.jsonl"));
}

describe("pi-pruner cost", () => {
  it("prints one row per request with its figures and the cause of each rewrite, and one per flush", async () => {
    const file = await session();
    const r = run(["cost", file]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^# Cost of .*s\.jsonl \(branch of leaf e\d+\): tokens of each request; est: our estimate/);
    expect(lines[1]).toMatch(/^n\s+read\s+written\s+uncached\s+est\s+cause$/);
    expect(lines[2]).toMatch(/^1\s+0\s+4,000\s+10$/);
    expect(lines[3]).toMatch(/^2\s+4,010\s+1,500\s+10$/);
    // 1,710 sent after 5,520: nothing added, 1,510 of the old prompt sent again, from the stubbed read (message 3) on.
    expect(lines[4]).toMatch(/^3\s+200\s+1,500\s+10\s+rewrote 1,510: a flush \(summarized\) stubbed t1 \(first changed message: 3\)$/);
    // 2,010 after 1,710: 300 added, 1,710 written again since the compaction replaced the start.
    expect(lines[5]).toMatch(/^4\s+0\s+2,000\s+10\s+rewrote 1,710: Pi compacted the context \(first changed message: 1\)$/);
    expect(lines[6]).toMatch(/^5\s+[0-9,]+\s+[0-9,]+\s+[0-9,]+\s+est$/);
    const flushes = lines.indexOf(lines.find((l) => l.startsWith("# Flushes"))!);
    expect(lines[flushes + 1]).toMatch(/^flush\s+next request\s+refs\s+rewrite\s+summarizer calls\s+saved chars × requests ≈ tokens$/);
    expect(lines[flushes + 2]).toMatch(/^e\d+\s+3\s+t1\s+1,510\s+1 \(100 in, 20 out, \$0\.0010\)\s+[0-9,]+ × 3 ≈ [0-9,]+$/);
  });

  it("--json gives the requests and flushes as core computes them", async () => {
    const file = await session();
    const r = run(["cost", file, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(Object.keys(json).sort()).toEqual(["file", "flushes", "leafId", "requests"]);
    expect(json.requests).toHaveLength(5);
    expect(json.requests[2]).toMatchObject({ n: 3, read: 200, written: 1500, uncached: 10, estimated: false, added: 0, rewritten: 1510, firstChange: 2 });
    expect(json.requests[2].causes).toEqual([{ kind: "flush", label: "a flush (summarized) stubbed t1", entryId: expect.any(String), refs: ["t1"] }]);
    expect(json.requests[3]).toMatchObject({ estimated: false, added: 300, rewritten: 1710, firstChange: 0 });
    expect(json.requests[3].causes.map((c: { kind: string }) => c.kind)).toEqual(["compaction"]);
    expect(json.requests[4].estimated).toBe(true);
    expect(json.flushes).toHaveLength(1);
    expect(json.flushes[0]).toMatchObject({ beforeRequest: 3, refs: ["t1"], rewriteTokens: 1510, laterRequests: 3, summarizer: { calls: 1, inputTokens: 100, outputTokens: 20, cost: 0.001 } });
    expect(json.flushes[0].savedTokens).toBe(Math.ceil((json.flushes[0].savedCharsPerRequest * 3) / 4));
  });

  it("--leaf takes an earlier branch end; a branch with no request says so", async () => {
    const file = await session();
    const upTo2 = JSON.parse(run(["cost", file, "--json", "--leaf", "e4"]).stdout);
    expect(upTo2.requests.map((c: { n: number }) => c.n)).toEqual([1, 2]);
    const none = run(["cost", file, "--leaf", "e1"]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain("no request was sent on this branch yet");
  });

  it("exits 1 on a usage error and 2 on a file it cannot read", async () => {
    const file = await session();
    expect(run(["cost"]).code).toBe(1);
    expect(run(["cost", file, "--leaf", "nope"]).code).toBe(1);
    expect(run(["cost", file, "--request", "2"]).code).toBe(1);
    const missing = run(["cost", join(tmpdir(), "pp-cost-missing", "none.jsonl")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read .*none\.jsonl: ENOENT/);
    const text = join(mkdtempSync(join(tmpdir(), "pp-cost-t-")), "README.md");
    writeFileSync(text, "# not a session\n");
    expect(run(["cost", text]).code).toBe(2);
  });

  it("is listed by help", () => {
    expect(run(["help"]).stdout).toContain("pi-pruner cost <session.jsonl> [--leaf ID] [--json] [--cwd DIR]");
  });
});

describe("pi-pruner view --request N", () => {
  it("says in its header what the request read, wrote and sent uncached, and why it rewrote", async () => {
    const file = await session();
    const third = run(["view", file, "--request", "3"]);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout.split("\n")).toContain("# cost: read 200 · written 1,500 · uncached 10 tokens · rewrote 1,510 beyond the 0 added: a flush (summarized) stubbed t1 (first changed message: 3)");
    const second = run(["view", file, "--request", "2"]);
    expect(second.stdout.split("\n")).toContain("# cost: read 4,010 · written 1,500 · uncached 10 tokens");
    expect(run(["view", file, "--request", "4"]).stdout.split("\n")).toContain("# cost: read 0 · written 2,000 · uncached 10 tokens · rewrote 1,710 beyond the 300 added: Pi compacted the context (first changed message: 1)");
    expect(run(["view", file, "--request", "last"]).stdout).toMatch(/^# cost: read [0-9,]+ · written [0-9,]+ · uncached [0-9,]+ tokens \(estimate\)$/m);
  });
});
