// A long session inside the real `pi` binary in which nothing new is pruned: the live render
// compares each request's fresh copy with the last request at a few places and renders only what
// was appended. The scripted server's log proves that every request sent exactly what the whole
// render of the session file gives for it (`pi-pruner view --request N`), and that each request
// began with the one before, byte for byte.
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../helpers/model-server.ts";
import { runPi } from "../helpers/run-pi.ts";
import { EXTENSION, agentRequests, scriptedPi, sentShape, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";

const TURNS = 30;
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

const pi = scriptedPi();
afterEach(pi.stop);

/** Two big sources read in one turn, then TURNS small reads, one per turn, then a final reply. */
async function setup() {
  const files: Record<string, string> = { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) };
  const task: Reply[] = [];
  for (let i = 1; i <= TURNS; i++) {
    files[`notes/n${i}.md`] = `note ${i}`;
    task.push({ toolCalls: [{ name: "read", arguments: { path: `notes/n${i}.md` } }] });
  }
  const agent: Reply[] = [{ toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, { name: "read", arguments: { path: "src/b.ts" } }] }, { text: "Both read." }, ...task, { text: "All notes read." }];
  // Flushes only when asked: after `/pruner now` nothing new is pruned for the rest of the session.
  return pi.start(agent, { files, model: { contextWindow: 400_000 }, settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES } } });
}

/** Whether each request's messages begin with the previous request's, as sent. */
function eachExtendsThePrevious(shapes: readonly string[][]): boolean[] {
  return shapes.slice(1).map((shape, i) => shapes[i]!.every((line, j) => shape[j] === line));
}

describe("a long session with nothing new to prune in real Pi", () => {
  it("every request sends what the whole render gives, the outputs pruned before it stubbed in each, and begins with the one before", async () => {
    const { server, ws } = await setup();
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read both sources", "/pruner now", "read every note"], timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    // Two for the first prompt, then one per note and the final reply.
    expect(requests).toHaveLength(2 + TURNS + 1);
    const task = requests.slice(2);
    // The two sources stay stubbed in every request of the task; every note is sent whole.
    for (const request of task) {
      const tools = toolMessages(request.body).map((t) => t.text);
      expect(tools.slice(0, 2)).toEqual([expect.stringMatching(/pruned: see ref `t1`/), expect.stringMatching(/pruned: see ref `t2`/)]);
      expect(tools.slice(2)).toEqual(tools.slice(2).map((_, i) => expect.stringContaining(`note ${i + 1}`)));
    }
    expect(toolMessages(task.at(-1)!.body)).toHaveLength(2 + TURNS);
    expect(eachExtendsThePrevious(task.map(sentShape))).toEqual(task.slice(1).map(() => true));
    await expectRequestViewsMatch(run.sessionFile!, requests);
  }, 180_000);

  it("with nothing pruned at all, every request is Pi's own context, sent as Pi built it", async () => {
    const { server, ws } = await setup();
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read both sources", "read every note"], timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(2 + TURNS + 1);
    const last = toolMessages(requests.at(-1)!.body).map((t) => t.text);
    expect(last).toHaveLength(2 + TURNS);
    expect(last[0]).toContain("a line 60: const value59");
    expect(last[1]).toContain("b line 60: const value59");
    expect(eachExtendsThePrevious(requests.map(sentShape))).toEqual(requests.slice(1).map(() => true));
    await expectRequestViewsMatch(run.sessionFile!, requests);
  }, 180_000);
});
