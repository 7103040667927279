// Outputs a later call made stale, inside the real `pi` binary: the flush stubs them without the
// summarizer, and context_tree_query still returns them. The scripted server's log is the proof.
import { afterEach, describe, expect, it } from "vitest";
import { runPi } from "../helpers/run-pi.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, refsAsked, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES } from "../helpers/request-equality.ts";

const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");

const pi = scriptedPi();
afterEach(pi.stop);

describe("stale outputs in real Pi", () => {
  it("a read the agent then rewrote the file over is stubbed as superseded, never sent to the summarizer, and recovered by its ref", async () => {
    const agent = [
      { toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "src/b.ts" } }] },
      { toolCalls: [{ name: "write", arguments: { path: "src/a.ts", content: "export const a = 1;\n" } }] },
      { text: "Rewrote a.ts." },
      { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t1"] } }] },
      { text: "Here is the old a.ts." },
    ];
    const { server, ws } = await pi.start(agent, {
      files: { "src/a.ts": lines("a", 60), "src/b.ts": lines("b", 60) },
      settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES } },
    });
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["rewrite a.ts", "/pruner now", "what did a.ts hold before?"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);

    // The summarizer was asked about b.ts alone: a.ts's old text never reached it.
    const summarizer = server.requests.filter(isSummarizerRequest);
    expect(summarizer.map((r) => refsAsked(r).map((a) => a.tool))).toEqual([["read"]]);
    expect(summarizer[0]!.allText).toContain("b line 60");
    expect(summarizer[0]!.allText).not.toContain("a line 60");

    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(6);
    const afterFlush = toolMessages(requests[4]!.body).map((t) => t.text);
    expect(afterFlush[0]).toBe("[read output superseded by a later call (write src/a.ts); context_tree_query returns ref `t1`]");
    expect(afterFlush[1]).toMatch(/pruned: see ref `t2`/);
    // The query brings the superseded output back, whole.
    const recovered = toolMessages(requests[5]!.body).at(-1)!.text;
    expect(recovered).toContain("## t1 — read");
    expect(recovered).toContain("a line 60: const value59");
  });
});
