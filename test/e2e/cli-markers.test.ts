// `pi-pruner view` and `inspect` of a session in which the agent rewound and shrank through our
// tools in the real `pi`: the model view of the file is exactly what the model was sent at that
// point (the server's log), the rewound output is absent from both, and the text marks the span.
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Reply } from "../helpers/model-server.ts";
import type { PiWorkspace } from "../helpers/pi-workspace.ts";
import { runPi } from "../helpers/run-pi.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, scriptedPi, sentShape, viewShape } from "../helpers/pruner-e2e.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));
const LOG = Array.from({ length: 200 }, (_, i) => `needle line ${i + 1}: request handled in ${i % 17} ms by worker ${i % 5}`).join("\n");
const BLOAT = "request handled in";
const NOTE = {
  what_happened: "An unfiltered grep of the app log flooded the context.",
  true_current_state: "The log holds only needle lines; src/app.ts exports answer = 42.",
  next: "Count the hits with grep -c instead.",
};
const REPLACEMENT = "src/app.ts: exports answer = 42 and a long comment block";

const pi = scriptedPi();
afterEach(pi.stop);

function cli(ws: PiWorkspace, args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: ws.agentDir } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}


describe("pi-pruner view of a session our self-control tools wrote in real Pi", () => {
  it("is exactly what the model was sent after the rewind and the shrink, with the rewound span marked where it was", async () => {
    const replies: Reply[] = [
      { toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "grep -n needle logs/app.log" } }] },
      { toolCalls: [{ name: "context_rewind", arguments: { granularity: "last_tool_call_group", note: NOTE } }] },
      { toolCalls: [{ name: "context_shrink", arguments: { target: { by_tool_name: "read", occurrence: "last" }, replacement: REPLACEMENT } }] },
      { text: "The log has only needle lines." },
      { text: "Still the same." },
    ];
    const { server, ws } = await pi.start(replies, {
      files: { "logs/app.log": LOG, "src/app.ts": `export const answer = 42;\n${"// a long comment block\n".repeat(40)}` },
      settings: {
        compaction: { enabled: false },
        // A flush at the first final reply, so stubs and markers compose; no nudges ride the requests
        // (they are never written to the file, so no view of it could show them).
        contextPrune: { minBatchChars: 10, cacheAware: false, selfControl: { bloatReminder: false, driftNudge: false, highWaterFraction: null } },
      },
    });
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["find the needles", "status?"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const file = run.sessionFile!;
    const last = agentRequests(server.requests).at(-1)!;
    const lastText = sentShape(last).join("\n");
    expect(lastText).not.toContain(BLOAT);
    expect(lastText).toContain(`<context-shrunk>\n${REPLACEMENT}\n</context-shrunk>`);
    expect(lastText).toMatch(/pruned: see ref `t\d+`/);

    const status = run.entries.findLast((e: JsonRecord) => e.type === "message" && e.message?.role === "user")!;
    const json = cli(ws, ["view", file, "--leaf", String(status.id), "--json", "--markers"]);
    expect(json.code, json.stderr).toBe(0);
    const view = JSON.parse(json.stdout) as { messages: AgentMessage[]; rewinds: { state: string; hiddenMessages: number }[]; shrinks: { state: string; applied: boolean }[]; rewoundSpans: { after: number; messages: number }[] };
    expect(viewShape(view.messages)).toEqual(sentShape(last));
    expect(view.rewinds).toEqual([expect.objectContaining({ state: "active", hiddenMessages: 2 })]);
    expect(view.shrinks).toEqual([expect.objectContaining({ state: "active", applied: true })]);
    expect(view.rewoundSpans).toHaveLength(1);
    // The span was right after the read, before the rewind's own call.
    const [span] = view.rewoundSpans;
    expect(view.messages[span!.after]).toMatchObject({ role: "toolResult", toolName: "read" });
    expect(view.messages[span!.after + 1]).toMatchObject({ role: "assistant", content: [expect.objectContaining({ type: "toolCall", name: "context_rewind" })] });

    const text = cli(ws, ["view", file, "--leaf", String(status.id)]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toContain(BLOAT);
    expect(text.stdout).toMatch(/^# rewind \S+ · active · last_tool_call_group · 2 messages left out$/m);
    expect(text.stdout).toContain(`: 2 messages — note: what happened: ${NOTE.what_happened} · true current state: ${NOTE.true_current_state} · next: ${NOTE.next}]`);
    expect(text.stdout).toMatch(/── \d+\. tool result · read · \S+ · shrunk by \S+ ──\n<context-shrunk>/);

    const inspect = cli(ws, ["inspect", file]);
    expect(inspect.code, inspect.stderr).toBe(0);
    expect(inspect.stdout).toContain("Self-control markers: 2");
    expect(inspect.stdout).toMatch(/rewind +\S+ +active +last_tool_call_group · 2 messages left out/);
    expect(inspect.stdout).toMatch(/shrink +\S+ +active +the last read result/);
    await expectRequestViewsMatch(file, agentRequests(server.requests));
  });
});
