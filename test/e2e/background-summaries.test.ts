// Summaries in the background, inside the real `pi` binary: the scripted server holds the
// summarizer's answers back, and its log shows when each request arrived. The agent's requests go
// on while the summarizer has not answered; the summaries reach the model at a later flush point
// (here the next prompt's start); a budget flush, which keeps the window from overflowing, waits.
import { afterEach, describe, expect, it } from "vitest";
import { readJsonlRecords } from "../helpers/jsonl-records.ts";
import type { ModelRequest, Reply } from "../helpers/model-server.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import { EXTENSION, agentRequests, goodSummary, isSummarizerRequest, refsAsked, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const STUB = "pruned: see ref";

const pi = scriptedPi();
afterEach(pi.stop);

/** A task reading `n` modules of 400 lines, one per turn, then a final reply; every summarizer answer held back `delayMs`. */
async function setup(n: number, delayMs: number, settings: Record<string, unknown> = {}) {
  const files: Record<string, string> = {};
  const replies: Reply[] = [];
  for (let i = 1; i <= n; i++) {
    files[`src/m${i}.ts`] = lines(`m${i}`, 400);
    replies.push({ toolCalls: [{ name: "read", arguments: { path: `src/m${i}.ts` } }] });
  }
  replies.push({ text: "All modules read." }, { text: "Nothing else." });
  // The default policy (cache-aware); a large window keeps the window cap out of the way.
  const workspace = { files, model: { contextWindow: 400_000 }, settings: { contextPrune: { selfControl: NO_NUDGES, backgroundSummaries: true, ...settings } } };
  return pi.start(replies, workspace, (req) => ({ ...goodSummary(req), delayMs }));
}

const stubs = (req: ModelRequest) => toolMessages(req.body).filter((t) => t.text.includes(STUB)).length;

describe("summaries in the background in real Pi", () => {
  it("the agent goes on while the summarizer has not answered; the summaries reach the model at the next prompt's start, as the session file renders them", async () => {
    const { server, ws } = await setup(10, 0);
    // No summarizer answer goes out until the task is over.
    const held = server.hold(isSummarizerRequest);
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, timeoutMs: 60_000 });
    try {
      await rpc.prompt("read every module");
      const summarizer = server.requests.filter(isSummarizerRequest);
      expect(summarizer.length).toBeGreaterThan(0);
      expect(summarizer.map((r) => r.reply)).toEqual(summarizer.map(() => undefined));
      const task = agentRequests(server.requests);
      expect(task).toHaveLength(11);
      // The agent's next request came right after the flush, with the summarizer's answer held,
      // and so did every request up to the task's final reply.
      const after = task.filter((r) => r.index > summarizer[0]!.index);
      expect(after.length).toBeGreaterThan(0);
      // History changes only at a flush point: no request of the task carries a stub yet.
      expect(task.map(stubs)).toEqual(task.map(() => 0));

      // The agent is idle; the summarizer answers (the next prompt's start waits for what it asked).
      // The next prompt's first request carries the summaries.
      held.release();
      await rpc.prompt("anything else?");
      const next = agentRequests(server.requests).at(-1)!;
      expect(agentRequests(server.requests)).toHaveLength(12);
      // What the summarizer was asked before that request (the final reply's flush asks as the task ends, or just after).
      const asked = server.requests.filter((r) => isSummarizerRequest(r) && r.index < next.index).flatMap((r) => refsAsked(r));
      expect(stubs(next)).toBe(asked.length);
      const texts = toolMessages(next.body).map((t) => t.text);
      expect(texts.slice(0, asked.length).every((t) => t.includes(STUB))).toBe(true);
      expect(next.allText).toContain("Pruned refs: `t1`");
      // The summaries were appended ahead of the prompt.
      const file = ws.sessionFiles()[0]!;
      const records = readJsonlRecords(file);
      const prompt = records.findIndex((e) => e.type === "message" && e.message?.role === "user" && JSON.stringify(e.message.content).includes("anything else?"));
      const summaries = records.map((e, i) => (e.type === "custom_message" && e.customType === "context-prune-summary" ? i : -1)).filter((i) => i >= 0);
      expect(summaries.length).toBeGreaterThan(0);
      expect(summaries.every((i) => i < prompt)).toBe(true);
      // Every request rebuilt from the session file is what the provider received.
      await expectRequestViewsMatch(file, agentRequests(server.requests));
    } finally {
      await rpc.close();
    }
  });

  it("a budget flush waits: each summarizer answer comes before the agent's next request, which carries it", async () => {
    const delayMs = 800;
    const { server, ws } = await setup(3, delayMs, { autoBudgetThreshold: 0.0001 });
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read every module"], timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const summarizer = server.requests.filter(isSummarizerRequest);
    expect(summarizer).toHaveLength(3);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(4);
    for (const asked of summarizer) {
      const next = requests.find((r) => r.receivedAt > asked.receivedAt)!;
      expect(next.receivedAt).toBeGreaterThanOrEqual(asked.receivedAt + delayMs);
    }
    // Each read is stubbed from the request right after its turn on.
    expect(requests.map(stubs)).toEqual([0, 1, 2, 3]);
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });
});
