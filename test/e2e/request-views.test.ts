// The model view of a request already sent, on sessions the real `pi` wrote with the pruner: the
// pruner records its render settings when a session starts and when they change, the person's
// later settings edits do not rewrite what a past request is shown to have sent, and the leaf's
// view is the next request. The server's log is the proof of what was sent.
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Reply } from "../helpers/model-server.ts";
import type { PiWorkspace } from "../helpers/pi-workspace.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, scriptedPi, sentShape, toolMessages, viewShape } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const STUB = /pruned: see ref `t\d+`/;

const pi = scriptedPi();
afterEach(pi.stop);

async function setup(replies: Reply[]) {
  return pi.start(replies, {
    files: { "src/x.ts": lines("x", 80), "docs/guide.md": lines("guide", 80) },
    settings: { contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES } },
  });
}

/** The command line with the workspace's agent dir: today's settings are the workspace's. */
function cli(ws: PiWorkspace, args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: ws.agentDir }, cwd: ws.cwd });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const settingsRecords = (entries: JsonRecord[]) => entries.filter((e) => e.type === "custom" && e.customType === "context-prune-settings");

describe("the settings record in real Pi", () => {
  it("is written when the session starts and when a render setting changes, not for other settings, not again on resume; the model never sees it", async () => {
    const { server, ws } = await setup([
      { toolCalls: [{ name: "read", arguments: { path: "src/x.ts" } }, { name: "read", arguments: { path: "docs/guide.md" } }] },
      { text: "read both" },
      { text: "stubbed now" },
      { text: "guide raw again" },
      { text: "after resume" },
    ]);
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, sessionId: "recorded" });
    let sessionFile: string;
    try {
      await rpc.prompt("read both files");
      await rpc.prompt("/pruner now");
      await rpc.prompt("what now?");
      await rpc.prompt("/pruner min-batch-chars 5");
      await rpc.prompt("/pruner protected-paths **/skills/**/*.md, docs/**");
      await rpc.prompt("and the guide?");
      sessionFile = String((await rpc.getState()).sessionFile);
    } finally {
      await rpc.close();
    }
    const resumed = await runPi({ workspace: ws, extension: EXTENSION, sessionId: "recorded", prompts: ["still there?"], timeoutMs: 30_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.sessionFile).toBe(sessionFile);

    const records = settingsRecords(resumed.entries);
    expect(records.map((r) => r.data.config.protectedPaths)).toEqual([["**/skills/**/*.md"], ["**/skills/**/*.md", "docs/**"]]);
    expect(records[0]!.data).toMatchObject({ version: "0.1.0", config: { enabled: true, cacheAware: false, selfControl: { enabled: true } } });
    expect(Object.keys(records[0]!.data.config)).not.toContain("minBatchChars");
    const requests = agentRequests(server.requests);
    for (const r of requests) expect(r.allText).not.toContain("protectedPaths");
    // The guide was stubbed until the pattern protected it; every request's view says so too.
    expect(toolMessages(requests[2]!.body).map((t) => STUB.test(t.text))).toEqual([true, true]);
    expect(toolMessages(requests[3]!.body).map((t) => STUB.test(t.text))).toEqual([true, false]);
    await expectRequestViewsMatch(sessionFile, requests);
  });
});

describe("pi-pruner view of a real session after the person changed the settings", () => {
  it("request N still shows what was sent; the next request, at the leaf, follows today's settings", async () => {
    const { server, ws } = await setup([{ toolCalls: [{ name: "read", arguments: { path: "src/x.ts" } }] }, { text: "read it" }, { text: "x is stubbed" }]);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read x", "/pruner now", "and now?"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const file = run.sessionFile!;
    const requests = agentRequests(server.requests);
    expect(toolMessages(requests[2]!.body)[0]!.text).toMatch(STUB);

    // The person protects the file afterwards (as the editor's right-click or `pi-pruner protect` does).
    const protect = cli(ws, ["protect", "src/x.ts", "--global"]);
    expect(protect.code, protect.stderr).toBe(0);
    const last = cli(ws, ["view", file, "--json", "--request", "last"]);
    expect(last.code, last.stderr).toBe(0);
    expect(viewShape(JSON.parse(last.stdout) as AgentMessage[])).toEqual(sentShape(requests[2]!));
    const next = cli(ws, ["view", file, "--json"]);
    const nextMessages = JSON.parse(next.stdout) as AgentMessage[];
    expect(viewShape(nextMessages).find((l) => l.startsWith("tool "))).toContain("x line 80:");
    expect(nextMessages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "x is stubbed" }] });
    const text = cli(ws, ["view", file, "--request", "last"]);
    expect(text.stdout).toMatch(/: request 3 of 3 \(the last request sent\),/);
    expect(text.stdout).toContain("# rendered with the settings the session recorded before this request (by pi-pruner 0.1.0)");
    await expectRequestViewsMatch(file, requests);
  });

  it("a session whose record was lost is rendered with today's settings, and the header says what was sent may have differed", async () => {
    const { server, ws } = await setup([{ toolCalls: [{ name: "read", arguments: { path: "src/x.ts" } }] }, { text: "read it" }, { text: "x is stubbed" }]);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read x", "/pruner now", "and now?"], timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const file = run.sessionFile!;
    // A session written before the record existed: the same file without it.
    const kept = readFileSync(file, "utf8").split("\n").filter((line) => !line.includes('"context-prune-settings"'));
    writeFileSync(file, kept.join("\n"));
    const text = cli(ws, ["view", file, "--request", "3"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("# rendered with today's settings: the session recorded no settings before this request, so what was sent may have differed");
    // Today's settings are the workspace's, the same as then: the view is still what was sent.
    expect(viewShape(JSON.parse(cli(ws, ["view", file, "--json", "--request", "3"]).stdout) as AgentMessage[])).toEqual(sentShape(agentRequests(server.requests)[2]!));
  });
});
