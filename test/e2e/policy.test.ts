// The default (cache-aware) flush policy inside the real `pi` binary, against the scripted model
// server (an OpenAI-completions model, so OpenAI's cache rules). The server's log of request
// bodies is the proof of what the model saw and of every summarizer call.
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../helpers/model-server.ts";
import { runPi } from "../helpers/run-pi.ts";
import { readJsonlRecords } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { DRIFT_NOTE, expectRequestViewsMatch, requestsWithNote } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const STUB = "pruned: see ref";

const pi = scriptedPi();
afterEach(pi.stop);

async function setup(files: Record<string, string>, agentReplies: Reply[]) {
  // No contextPrune block: the defaults. A large window keeps the window cap out of the way.
  return pi.start(agentReplies, { files, model: { contextWindow: 400_000 } });
}

describe("the cache-aware policy in real Pi", () => {
  it("a long task flushes mid-task once the saving pays back: stubs reach the model before the task's final reply", async () => {
    const files: Record<string, string> = {};
    const reads: Reply[] = [];
    for (let i = 1; i <= 10; i++) {
      files[`src/m${i}.ts`] = lines(`m${i}`, 400);
      reads.push({ toolCalls: [{ name: "read", arguments: { path: `src/m${i}.ts` } }] });
    }
    const { server, ws } = await setup(files, [...reads, { text: "All ten modules read." }]);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read every module"], timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);

    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(11);
    const summarizerCalls = server.requests.filter(isSummarizerRequest);
    expect(summarizerCalls.length).toBeGreaterThan(0);
    // The first request that carries a stub: after a few reads (too few requests lie ahead at
    // first to repay a summarizer call), and before the final reply's request.
    const stubbed = requests.map((r) => toolMessages(r.body).filter((t) => t.text.includes(STUB)).length);
    const first = stubbed.findIndex((n) => n > 0);
    expect(first).toBeGreaterThan(2);
    expect(first).toBeLessThan(10);
    // In it every read the model had already seen is a stub; the newest read, which it has not, is raw.
    const texts = toolMessages(requests[first]!.body).map((t) => t.text);
    expect(texts).toHaveLength(first);
    expect(texts.slice(0, -1).every((t) => t.includes(STUB))).toBe(true);
    expect(texts.at(-1)).toContain(`m${first} line 400:`);
    // The summary of the flushed reads reached the model in the same request.
    expect(requests[first]!.allText).toContain("Pruned refs: `t1`");
    // Between that flush and the next one, history stays as it was: each request starts with the previous one's tool outputs.
    for (let n = first + 1; n < requests.length && stubbed[n] === stubbed[first]; n++) {
      expect(toolMessages(requests[n]!.body).slice(0, texts.length).map((t) => t.text)).toEqual(texts);
    }
    // On the defaults the drift note rides some of these requests; it is never written to the session.
    await expectRequestViewsMatch(run.sessionFile!, requests, { nudged: requestsWithNote(requests, DRIFT_NOTE) });
  });

  it("a short session is left alone: no summarizer call, nothing stubbed, and the session holds no summary", async () => {
    const { server, ws } = await setup({ "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) }, [
      { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] },
      { text: "Both read." },
      { text: "Nothing else to do." },
    ]);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read both", "anything else?"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.filter(isSummarizerRequest)).toEqual([]);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(3);
    // The request of the second prompt still carries both outputs as they were read.
    const texts = toolMessages(requests[2]!.body).map((t) => t.text);
    expect(texts).toEqual([expect.stringContaining("a line 60:"), expect.stringContaining("b line 60:")]);
    expect(requests.some((r) => r.allText.includes(STUB))).toBe(false);
    const entries = readJsonlRecords(ws.sessionFiles()[0]!);
    expect(entries.filter((e) => e.type === "custom_message" && e.customType === "context-prune-summary")).toEqual([]);
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });
});
