// The live pruner inside the real `pi` binary, against a scripted model server on loopback.
// The server's log of request bodies is the proof of what the model saw.
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import type { Reply } from "../helpers/model-server.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const BIG_OUTPUT_TOOL = "test/fixtures/pi/big-output-tool.ts";
const SKILL = "# Release skill\n\n1. Run the release gate before tagging.\n2. Never skip step 1.\n";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

const pi = scriptedPi();
afterEach(pi.stop);

function customEntries(entries: JsonRecord[], customType: string): JsonRecord[] {
  return entries.filter((e) => (e.type === "custom" || e.type === "custom_message") && e.customType === customType);
}

async function setup(
  agentReplies: Reply[],
  opts: { settings?: Record<string, unknown>; summarizer?: (req: Parameters<typeof goodSummary>[0]) => Reply; contextWindow?: number } = {},
) {
  return pi.start(
    agentReplies,
    {
      files: {
        "skills/release/SKILL.md": SKILL,
        "src/a.ts": lines("a", 60),
        "src/b.ts": lines("b", 60),
      },
      // Flush mechanics on small scripted sessions (cacheAware off: a final reply flushes when asked to); the default policy is tested in policy.test.ts.
      // No nudges: they are never written to the session, so no view of it could show what they added.
      settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES, ...(opts.settings ?? {}) } },
      model: opts.contextWindow ? { contextWindow: opts.contextWindow } : undefined,
    },
    opts.summarizer ?? goodSummary,
  );
}

describe("the live pruner in real Pi", () => {
  it("smoke: /pruner now indexes the batch, keeps the skill file verbatim and stubs the rest", async () => {
    const { server, ws } = await setup([
      { toolCalls: [{ name: "read", arguments: { path: "skills/release/SKILL.md" } }, { name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
      { text: "Read them." },
      { text: "Next answer." },
    ]);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read the skill and sources", "/pruner now", "what next?"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);

    const index = customEntries(run.entries, "context-prune-index");
    expect(index).toHaveLength(1); // (a) the batch was indexed, not skipped as trivial
    const indexed = index[0]!.data.toolCalls.map((c: JsonRecord) => c.args.path);
    expect(indexed).toEqual(["src/a.ts", "src/b.ts"]);
    expect(indexed).not.toContain("skills/release/SKILL.md"); // (b) the protected call is in no record
    expect(customEntries(run.entries, "context-prune-summary")).toHaveLength(1);

    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(3);
    const before = toolMessages(requests[1]!.body);
    expect(before.map((t) => t.text.includes("line 60"))).toEqual([false, true, true]);
    const after = toolMessages(requests[2]!.body);
    expect(after[0]!.text).toContain(SKILL.trim()); // (c) the skill text, verbatim
    expect(after[1]!.text).toMatch(/pruned: see ref `t1`/);
    expect(after[2]!.text).toMatch(/pruned: see ref `t2`/);
    expect(after[1]!.text).not.toContain("line 60");
    // The summary reached the model too.
    expect(requests[2]!.allText).toContain("Pruned refs: `t1`, `t2`");
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });

  it("flushes on the agent's final reply (cacheAware off), and recovers a ref with context_tree_query", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
        { text: "Both read." },
        { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t1"] } }] },
        { text: "Recovered." },
      ],
      { settings: { pruneOn: "agent-message" } },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read both", "show me a.ts again"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(4);
    // Request 3 (the second prompt) already sees stubs.
    expect(toolMessages(requests[2]!.body).map((t) => t.text)).toEqual([expect.stringContaining("`t1`"), expect.stringContaining("`t2`")]);
    // Request 4 holds the query result with a.ts's original output.
    const recovered = toolMessages(requests[3]!.body).at(-1)!;
    expect(recovered.text).toContain("## t1 — read");
    expect(recovered.text).toContain("a line 60: const value59");
    expect(recovered.text).not.toContain("b line 1:");
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });

  it("dedups a re-read, spills a 100 KB output and skips a trivial batch", async () => {
    const { server, ws } = await setup([
      { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] },
      { text: "one" },
      { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] },
      { text: "two" },
      { toolCalls: [{ name: "fetch_page", arguments: { chars: 100_000 } }] },
      { text: "three" },
      { toolCalls: [{ name: "bash", arguments: { command: "echo tiny" } }] },
      { text: "four" },
      { text: "five" },
    ], { contextWindow: 400_000 }); // Pi's own compaction estimates from raw sizes; keep it out of this test
    const run = await runPi({
      workspace: ws,
      extension: [EXTENSION, BIG_OUTPUT_TOOL],
      prompts: ["read a", "/pruner now", "read a again", "/pruner now", "fetch", "tiny", "/pruner now", "done?"],
      timeoutMs: 40_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(customEntries(run.entries, "context-prune-dedup-alias")).toHaveLength(1);
    const summarizerCalls = server.requests.filter(isSummarizerRequest);
    expect(summarizerCalls).toHaveLength(1); // the re-read cost no summarizer call; the tiny batch neither
    const frontiers = customEntries(run.entries, "context-prune-frontier").map((e) => e.data.outcome);
    expect(frontiers).toEqual(["summarized", "skipped-deduped", "skipped-trivial"]);
    const spill = customEntries(run.entries, "context-prune-index").flatMap((e) => e.data.toolCalls).find((c: JsonRecord) => c.spillPath);
    expect(spill.spillBytes).toBe(100_000);
    expect(existsSync(spill.spillPath)).toBe(true);
    expect(readFileSync(spill.spillPath, "utf8")).toHaveLength(100_000);
    const last = toolMessages(agentRequests(server.requests).at(-1)!.body);
    expect(last[0]!.text).toContain("`t1`");
    expect(last[1]!.text).toBe(last[0]!.text); // the alias renders exactly like its original
    expect(last[2]!.text).toContain("spilled to disk (100000 bytes)");
    expect(last[2]!.text.length).toBeLessThan(2_000);
    expect(last[3]!.text).toContain("tiny");
    await expectRequestViewsMatch(run.sessionFile!, agentRequests(server.requests));
  });

  it("a summary longer than its input is skipped and the outputs stay raw", async () => {
    const { server, ws } = await setup(
      [{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }, { text: "ok" }, { text: "next" }],
      { summarizer: (req) => ({ text: `${(goodSummary(req) as { text: string }).text}\n${"padding ".repeat(1000)}` }) },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read", "/pruner now", "next"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(customEntries(run.entries, "context-prune-frontier").map((e) => e.data.outcome)).toEqual(["skipped-oversized"]);
    expect(customEntries(run.entries, "context-prune-index")).toHaveLength(0);
    expect(toolMessages(agentRequests(server.requests).at(-1)!.body)[0]!.text).toContain("a line 60");
    await expectRequestViewsMatch(run.sessionFile!, agentRequests(server.requests));
  });

  it("a reload with --session-id rebuilds the state: stubs come back byte for byte", async () => {
    const { server, ws } = await setup([
      { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "bash", arguments: { command: "cat src/b.ts" } }] },
      { text: "ok" },
      { text: "first run, after flush" },
      { text: "second run" },
    ]);
    const first = await runPi({ workspace: ws, extension: EXTENSION, sessionId: "reload-me", prompts: ["read", "/pruner now", "again"], timeoutMs: 30_000 });
    expect(first.code, first.stderr).toBe(0);
    const second = await runPi({ workspace: ws, extension: EXTENSION, sessionId: "reload-me", prompts: ["after reload"], timeoutMs: 30_000 });
    expect(second.code, second.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    const stubsBefore = toolMessages(requests[2]!.body);
    const stubsAfter = toolMessages(requests[3]!.body);
    expect(stubsBefore[0]!.text).toContain("`t1`");
    expect(stubsAfter.slice(0, 2)).toEqual(stubsBefore.slice(0, 2));
    // Both runs appended to one session: its requests are both runs' requests.
    expect(second.sessionFile).toBe(first.sessionFile);
    await expectRequestViewsMatch(second.sessionFile!, requests);
  });
});

describe("summarizer faults", () => {
  const faults: [string, Reply, Record<string, unknown>][] = [
    ["HTTP 500", { status: 500 }, {}],
    ["a stream that stalls past the idle timeout", { text: "- `t1` par", stallAfterChunks: 1, stallMs: 20_000 }, { summarizerIdleTimeoutMs: 800 }],
    ["an empty answer", { empty: true }, {}],
  ];
  for (const [name, fault, settings] of faults) {
    it(`${name}: the turn completes, raw outputs stay, nothing half-persisted, one warning, the next flush retries`, async () => {
      let failing = true;
      const { server, ws } = await setup(
        [{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }, { text: "ok" }, { text: "after fault" }, { text: "after retry" }],
        { settings, summarizer: (req) => (failing ? fault : goodSummary(req)) },
      );
      const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
      try {
        await rpc.prompt("read a");
        await rpc.prompt("/pruner now");
        await rpc.prompt("go on");
        let entries = await rpc.getEntries();
        // Nothing of the batch is persisted (the stats entry may record what the failed call cost; the settings entry is the session's start).
        expect(entries.filter((e) => e.customType?.startsWith("context-prune-") && e.customType !== "context-prune-stats" && e.customType !== "context-prune-settings")).toEqual([]);
        const afterFault = agentRequests(server.requests).at(-1)!;
        expect(toolMessages(afterFault.body)[0]!.text).toContain("a line 60");
        const warnings = rpc.notifications().filter((n) => n.message.includes("summarizer failed"));
        expect(warnings).toHaveLength(1);
        failing = false;
        await rpc.prompt("/pruner now");
        await rpc.prompt("and now");
        entries = await rpc.getEntries();
        expect(entries.filter((e) => e.customType === "context-prune-frontier").map((e) => e.data.outcome)).toEqual(["summarized"]);
        expect(toolMessages(agentRequests(server.requests).at(-1)!.body)[0]!.text).toContain("`t1`");
        await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentRequests(server.requests));
      } finally {
        await rpc.close();
      }
    });
  }
});

describe("budget triggers", () => {
  it("autoBudgetThreshold flushes in the middle of a run, so the next request of the same run is already pruned", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
        { toolCalls: [{ name: "bash", arguments: { command: "echo more" } }] },
        { text: "done" },
      ],
      { settings: { autoBudgetThreshold: 0.01 } },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read and continue"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(3);
    // pruneOn is on-demand here: only the budget trigger can have flushed before request 2.
    expect(toolMessages(requests[1]!.body).map((t) => t.text)).toEqual([expect.stringContaining("`t1`"), expect.stringContaining("`t2`")]);
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });
});

describe("recovering spilled output", () => {
  it("context_tree_query reads a spilled output back from its sidecar, only as far as Pi passes a tool result on", async () => {
    const { server, ws } = await setup(
      [
        { toolCalls: [{ name: "fetch_page", arguments: { chars: 100_000 } }] },
        { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t1", "t99"] } }] },
        { text: "done" },
      ],
      { contextWindow: 400_000 },
    );
    const run = await runPi({ workspace: ws, extension: [EXTENSION, BIG_OUTPUT_TOOL], prompts: ["fetch and look again"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const last = toolMessages(agentRequests(server.requests).at(-1)!.body);
    expect(last[0]!.text).toContain("spilled to disk (100000 bytes)");
    const recovered = last[1]!.text;
    expect(recovered).toContain("## t1 — fetch_page");
    expect(recovered).toContain("<p>lorem ipsum dolor sit amet, page content</p>\n<p>lorem");
    // Read only as far as the answer holds, and said so.
    expect(recovered).toMatch(/\n\[Output truncated: the first \d+ of 100000 bytes shown; the rest does not fit in one answer\.\]$/);
    expect(recovered.length).toBeLessThanOrEqual(52 * 1024);
    expect(recovered).toContain("## t99\nUnknown: no pruned output has this ref or tool-call id.");
    await expectRequestViewsMatch(run.sessionFile!, agentRequests(server.requests));
  });
});
