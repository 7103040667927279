// `pi-pruner inspect` and `view` as a person reads them: the call table keeps its columns whatever
// the tool names, markers are named by short ids, and a file of several branches says which one is
// shown, what the others are and how to show them.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main, type CliIO } from "../../../core/src/cli/cli.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const agentDir = mkdtempSync(join(tmpdir(), "pp-agent-"));
  const io: CliIO = { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: agentDir }, cwd: tmpdir() };
  const code = await main(args, io);
  return { code, out, err };
}

function write(b: SessionBuilder): string {
  return b.writeTo(join(mkdtempSync(join(tmpdir(), "pp-layout-")), "s.jsonl"));
}

/** The rows of the "Tool calls" table, its heading first. */
function callRows(report: string): string[] {
  const lines = report.split("\n");
  const start = lines.findIndex((l) => l.startsWith("Tool calls:"));
  const rows: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.trim()) break;
    if (!line.startsWith("          ")) rows.push(line);
  }
  return rows;
}

const REWIND_ID = "694b186a-9439-406a-9749-6c6d3465d392";
const SHRINK_ID = "8f2d600d-2eee-4483-a8ef-5e42891c3b59";

describe("inspect's call table", () => {
  it("keeps every column in place with long tool names, and a failed call says so in its own column", async () => {
    const b = new SessionBuilder({ sessionId: "s-layout", cwd: "/workspace" }).user("look around");
    b.toolUse("read", { path: "src/a.ts" }, "A".repeat(300));
    b.toolUse("context_tree_query", { toolCallIds: ["t1"] }, "recovered");
    b.toolUse("bash", { command: "npm test" }, "1 failing", { isError: true });
    b.toolUse("mulligan_shrink", { target: "last" }, "shrunk");
    b.assistant("done");
    const r = await run(["inspect", write(b)]);
    expect(r.code, r.err).toBe(0);
    const rows = callRows(r.out);
    expect(rows[0]).toMatch(/^ {2}ref +tool +state +chars result +target$/);
    const heading = rows[0]!;
    const columns = ["tool", "state", "result", "target"].map((name) => heading.indexOf(name));
    const body = rows.slice(1);
    expect(body).toHaveLength(4);
    // Every cell starts under its heading (a row without a target ends before that column).
    for (const row of body) for (const at of columns) expect(row.padEnd(heading.length)[at - 1], row).toBe(" ");
    expect(body.map((row) => row.slice(columns[0], columns[1]).trim())).toEqual(["read", "context_tree_query", "bash", "mulligan_shrink"]);
    expect(body.map((row) => row.slice(columns[2], columns[3]).trim())).toEqual(["ok", "ok", "error", "ok"]);
    expect(body.map((row) => row.slice(columns[3]))).toEqual(["src/a.ts", "", "npm test", ""]);
  });

  it("names the agent's markers by the first 8 characters of their UUIDs, as entry ids are shown; --json keeps them whole", async () => {
    const b = new SessionBuilder({ sessionId: "s-markers", cwd: "/workspace" }).user("look around");
    b.toolUse("bash", { command: "grep -rn x ." }, "x".repeat(2000), { id: "c1" });
    const ts = Date.now();
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: REWIND_ID, granularity: "last_tool_call_group", note: { what_happened: "too much", true_current_state: "nothing changed", next: "search less" }, seq: 1, ts });
    b.toolUse("read", { path: "src/a.ts" }, "A".repeat(2000), { id: "c2" });
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: SHRINK_ID, target: { by_tool_call_id: "c2" }, replacement: "a.ts: all A's", seq: 2, ts: ts + 1 });
    b.assistant("done");
    const file = write(b);
    const r = await run(["inspect", file]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^ {2}rewind +694b186a +\S/m);
    expect(r.out).toMatch(/^ {2}shrink +8f2d600d +\S/m);
    expect(r.out).not.toContain(REWIND_ID);
    const json = JSON.parse((await run(["inspect", file, "--json"])).out);
    expect(json.markers.map((m: { markerId: string }) => m.markerId)).toEqual([REWIND_ID, SHRINK_ID]);
  });
});

describe("a file of two branches", () => {
  /** "first question" answered, then the person went back to the start and asked "second question". */
  function twoBranches(): { file: string; first: string; second: string } {
    const b = new SessionBuilder({ sessionId: "s-branches", cwd: "/workspace" });
    const root = b.user("first question").lastId;
    b.toolUse("read", { path: "src/a.ts" }, "A".repeat(500)).assistant("first answer");
    const first = b.lastId;
    const rootParent = b.entry(root).parentId;
    b.branchFrom(rootParent).user("second question").assistant("second answer");
    return { file: write(b), first, second: b.lastId };
  }

  it("inspect says which branch it shows, lists every leaf with its last prompt, and --leaf shows the other", async () => {
    const { file, first, second } = twoBranches();
    const r = await run(["inspect", file]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`  leaf: ${second} · branch 2 of 2 (the one Pi resumes from)\n`);
    expect(r.out).toContain(`Branches: 2 (this report shows ${second}; another: --leaf ID)\n  ${" "} ${first}  last prompt: "first question"\n  * ${second}  last prompt: "second question"\n`);
    const other = await run(["inspect", file, "--leaf", first]);
    expect(other.out).toContain(`  leaf: ${first} · branch 1 of 2\n`);
    expect(other.out).toContain(`  * ${first}  last prompt: "first question"`);
    expect(other.out).toMatch(/^ {2}- +read +raw/m);
  });

  it("view says the same in its header, for the next request and for a request already sent", async () => {
    const { file, first, second } = twoBranches();
    const next = await run(["view", file]);
    expect(next.code, next.err).toBe(0);
    expect(next.out).toContain(`# branch 2 of 2 (the one Pi resumes from); the other leaves: ${first} "first question"; another branch: --leaf ID (pi-pruner inspect lists them)\n`);
    const sent = await run(["view", file, "--leaf", first, "--request", "last"]);
    expect(sent.code, sent.err).toBe(0);
    expect(sent.out).toContain(`# branch 1 of 2; the other leaves: ${second} "second question"; another branch: --leaf ID (pi-pruner inspect lists them)\n`);
  });

  it("a file of one branch says nothing about branches", async () => {
    const b = new SessionBuilder({ sessionId: "s-one", cwd: "/workspace" }).user("only question").assistant("only answer");
    const file = write(b);
    expect((await run(["inspect", file])).out).not.toContain("Branches:");
    expect((await run(["view", file])).out).not.toMatch(/^# branch /m);
  });
});
