// Pi's own compaction inside the real `pi` binary, sent the history as the model last saw it. The
// scripted server's log of Pi's compaction request (recognized by Pi's summarization prompt) is the
// proof: with the pruner on it carries the stubs (after `/compact`, and at Pi's context threshold
// mid-task), with the pruner off (or when the pruner's try fails) the raw outputs, and either way
// Pi's own prompt, previous summary and custom instructions.
import { afterEach, describe, expect, it } from "vitest";
import { startModelServer, type ModelRequest, type ModelServer, type Reply } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { startPiRpc, type PiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, goodSummary, isSummarizerRequest } from "../helpers/pruner-e2e.ts";
import { agentOnly, historyRequests, isCompactionRequest } from "../helpers/pi-compaction.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const SKILL = "# Release skill\n\n1. Run the release gate before tagging.\n2. Never skip step 1.\n";
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const FOCUS = "Keep the release gate in view";
const FIRST_SUMMARY = "## Goal\nRead the skill and the sources (first checkpoint).";
const SECOND_SUMMARY = "## Goal\nRead the tests too (second checkpoint).";
const PROMPT_NEXT = "what next?";
// Longer than compaction.keepRecentTokens below: Pi keeps only this answer and summarizes the turn
// it ends apart (a split turn: the history, then the turn's prefix, each its own request).
const ANSWER = `Next answer. ${"The plan holds and nothing else is needed here. ".repeat(12)}`;

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  ws?.cleanup();
  server = undefined;
  ws = undefined;
});

/** The instructions of a compaction request: everything after the conversation Pi serialized. */
const instructionsOf = (req: ModelRequest) => req.allText.slice(req.allText.indexOf("</conversation>"));

async function setup(opts: { settings?: Record<string, unknown>; compaction?: Reply[]; piCompaction?: Record<string, unknown> } = {}) {
  server = await startModelServer();
  server.route(isSummarizerRequest, goodSummary);
  server.route(isCompactionRequest, opts.compaction ?? [{ text: FIRST_SUMMARY }, { text: "Asked what next." }, { text: SECOND_SUMMARY }, { text: "Asked again." }]);
  server.route(() => true, [
    { toolCalls: [{ name: "read", arguments: { path: "skills/release/SKILL.md" } }, { name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
    { text: "Read them." },
    { text: ANSWER },
    { toolCalls: [{ name: "read", arguments: { path: "test/a.test.ts" } }] },
    { text: "Tests read." },
    { text: ANSWER },
    { text: "Done." },
  ]);
  ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: { "skills/release/SKILL.md": SKILL, "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60), "test/a.test.ts": lines("test", 60) },
    settings: {
      // Pi keeps only the newest answer; its own threshold stays out of the way unless a test sets it.
      compaction: { enabled: false, keepRecentTokens: 110, ...(opts.piCompaction ?? {}) },
      contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES, ...(opts.settings ?? {}) },
    },
    model: { contextWindow: 400_000 },
  });
  return { server, ws };
}

/** Task one (three reads, pruned by `/pruner now`), a short exchange, then `/compact` with a focus. */
async function firstTaskThenCompact(rpc: PiRpc): Promise<JsonRecord> {
  await rpc.prompt("read the skill and the sources");
  await rpc.prompt("/pruner now");
  await rpc.prompt(PROMPT_NEXT);
  const compacted = await rpc.send({ type: "compact", customInstructions: FOCUS }, 30_000);
  expect(compacted.success, JSON.stringify(compacted)).toBe(true);
  return compacted;
}

const compactionEntries = (entries: JsonRecord[]) => entries.filter((e) => e.type === "compaction");

describe("Pi's compaction sent the pruned history", () => {
  it("the compaction request carries the stubs and the protected skill verbatim, with Pi's prompt, focus and previous summary; the file lists name every file", async () => {
    const { server, ws } = await setup();
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await firstTaskThenCompact(rpc);
      const first = historyRequests(server.requests);
      expect(first).toHaveLength(1);
      const sent = first[0]!.allText;
      expect(sent).toMatch(/pruned: see ref `t1`/);
      expect(sent).toMatch(/pruned: see ref `t2`/);
      expect(sent).not.toContain("a line 1: const value0");
      expect(sent).not.toContain("b line 1: const value0");
      expect(sent).toContain(SKILL.trim());
      expect(sent).toContain("Pruned refs: `t1`, `t2`");
      expect(sent).toContain("The messages above are a conversation to summarize.");
      expect(sent).toContain(`Additional focus: ${FOCUS}`);

      // Task two, then a second compaction: Pi's update prompt with the first summary.
      await rpc.prompt("read the tests");
      await rpc.prompt("/pruner now");
      await rpc.prompt(PROMPT_NEXT);
      const second = await rpc.send({ type: "compact", customInstructions: FOCUS }, 30_000);
      expect(second.success, JSON.stringify(second)).toBe(true);
      const both = historyRequests(server.requests);
      expect(both).toHaveLength(2);
      const update = both[1]!.allText;
      expect(update).toContain(`<previous-summary>\n${FIRST_SUMMARY}`);
      expect(update).toContain("The messages above are NEW conversation messages");
      expect(update).toMatch(/pruned: see ref `t3`/);
      expect(update).not.toContain("test line 1: const value0");

      const entries = compactionEntries(await rpc.getEntries());
      expect(entries).toHaveLength(2);
      for (const entry of entries) expect(entry.fromHook).toBe(true);
      expect(String(entries[0]!.summary).startsWith(FIRST_SUMMARY)).toBe(true);
      // Pi's file lists, carried across both compactions.
      expect(entries[1]!.details.readFiles).toEqual(["skills/release/SKILL.md", "src/a.ts", "src/b.ts", "test/a.test.ts"]);
      expect(entries[1]!.summary).toContain("<read-files>\nskills/release/SKILL.md\nsrc/a.ts\nsrc/b.ts\ntest/a.test.ts\n</read-files>");
      const data = entries[0]!.details.piPruner;
      expect(data.sentChars).toBeLessThan(data.rawChars / 2);

      await rpc.prompt("anything else?");
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentOnly(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("with the pruner off, the compaction request is Pi's own: the raw outputs, the same prompt and focus", async () => {
    const on = await setup();
    const rpcOn = await startPiRpc({ workspace: on.ws, extension: EXTENSION, timeoutMs: 60_000 });
    let pruned: ModelRequest;
    try {
      await firstTaskThenCompact(rpcOn);
      pruned = historyRequests(on.server.requests)[0]!;
    } finally {
      await rpcOn.close();
    }
    await server!.close();
    ws!.cleanup();

    const off = await setup({ settings: { enabled: false } });
    const rpc = await startPiRpc({ workspace: off.ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await firstTaskThenCompact(rpc);
      const requests = historyRequests(off.server.requests);
      expect(requests).toHaveLength(1);
      const own = requests[0]!;
      expect(own.allText).toContain("a line 1: const value0");
      expect(own.allText).toContain("b line 1: const value0");
      expect(own.allText).not.toContain("pruned: see ref");
      expect(instructionsOf(own)).toEqual(instructionsOf(pruned));
      expect(own.allText.length).toBeGreaterThan(pruned.allText.length);
      const entries = compactionEntries(await rpc.getEntries());
      expect(entries).toHaveLength(1);
      expect(entries[0]!.fromHook).toBeFalsy();
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentOnly(off.server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("Pi's compaction at its context threshold, mid-task right after a budget flush, is sent the stubs too", async () => {
    // A budget flush at the tool turn's end (its summaries waited for) prunes the reads before Pi
    // checks its threshold, which the tool turn crosses.
    const { server, ws } = await setup({ settings: { pruneOn: "agent-message", autoBudgetThreshold: 0.001 }, piCompaction: { enabled: true, reserveTokens: 399_000 } });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await rpc.prompt("read the skill and the sources");
      const reasons = rpc.events().filter((e) => e.type === "compaction_start").map((e) => e.reason);
      expect(reasons).toEqual(["threshold"]);
      // Mid-task: right after the tool turn, before the final reply.
      const order = rpc.events().filter((e) => ["turn_end", "agent_end", "compaction_start"].includes(String(e.type))).map((e) => e.type);
      expect(order).toEqual(["turn_end", "compaction_start", "turn_end", "agent_end"]);
      const requests = server.requests.filter(isCompactionRequest);
      expect(requests.length).toBeGreaterThan(0);
      for (const request of requests) {
        expect(request.allText).not.toContain("a line 1: const value0");
        expect(request.allText).not.toContain("b line 1: const value0");
      }
      const sent = requests.map((r) => r.allText).join("\n");
      expect(sent).toMatch(/pruned: see ref `t1`/);
      expect(sent).toMatch(/pruned: see ref `t2`/);
      expect(sent).toContain(SKILL.trim());
      const entries = compactionEntries(await rpc.getEntries());
      expect(entries).toHaveLength(1);
      expect(entries[0]!.fromHook).toBe(true);
      expect(entries[0]!.details.readFiles).toEqual(["skills/release/SKILL.md", "src/a.ts", "src/b.ts"]);
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentOnly(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("when the pruned summary does not come in time, Pi's own compaction runs on the raw history and the failure is reported once", async () => {
    const { server, ws } = await setup({
      settings: { summarizerIdleTimeoutMs: 1_000 },
      compaction: [{ text: "too late", delayMs: 5_000 }, { text: FIRST_SUMMARY }, { text: "Asked what next." }],
    });
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await firstTaskThenCompact(rpc);
      const requests = historyRequests(server.requests);
      expect(requests).toHaveLength(2);
      expect(requests[0]!.allText).toMatch(/pruned: see ref `t1`/);
      expect(requests[1]!.allText).toContain("a line 1: const value0");
      expect(requests[1]!.allText).toContain(`Additional focus: ${FOCUS}`);
      const entries = compactionEntries(await rpc.getEntries());
      expect(entries).toHaveLength(1);
      expect(entries[0]!.fromHook).toBeFalsy();
      expect(String(entries[0]!.summary).startsWith(FIRST_SUMMARY)).toBe(true);
      const reports = rpc.notifications().filter((n) => n.message.includes("could not send Pi's compaction the pruned history"));
      expect(reports).toHaveLength(1);
      expect(reports[0]!.message).toContain("silent for 1000 ms");
      await expectRequestViewsMatch(String((await rpc.getState()).sessionFile), agentOnly(server.requests));
    } finally {
      await rpc.close();
    }
  });
});
