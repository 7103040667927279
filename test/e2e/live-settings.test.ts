// Settings that reach a running session: the real `pi` with the pruner, whose agent changes the
// settings mid-task through its bash tool (`pi-pruner protect`, then a broken file). The server's
// log is the proof of what each request sent; the session's settings record says why.
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Reply } from "../helpers/model-server.ts";
import type { PiWorkspace } from "../helpers/pi-workspace.ts";
import { runPi } from "../helpers/run-pi.ts";
import { startPiRpc } from "../helpers/pi-rpc.ts";
import type { JsonRecord } from "../helpers/jsonl-records.ts";
import { EXTENSION, agentRequests, isSummarizerRequest, refsAsked, scriptedPi, toolMessages } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES, expectRequestViewsMatch } from "../helpers/request-equality.ts";
import { parseSessionText } from "../../core/src/session/session-reader.ts";
import { buildRequestView } from "../../core/src/view/request-views.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { protectionReason } from "../../core/src/settings/protection.ts";

const bin = fileURLToPath(new URL("../../pi-extension/bin/pi-pruner.js", import.meta.url));
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}: const value${i} = compute(${i});`).join("\n");
const STUB = /pruned: see ref `t\d+`/;
/** What the agent's bash tool runs: the built command line, by path, with this Node. */
const PROTECT_GUIDE = `${JSON.stringify(process.execPath)} ${JSON.stringify(bin)} protect '**/guide.md'`;
const GUIDE_READ = { toolCalls: [{ name: "read", arguments: { path: "docs/guide.md" } }, { name: "read", arguments: { path: "src/x.ts" } }] };

const pi = scriptedPi();
afterEach(pi.stop);

async function setup(replies: Reply[]) {
  return pi.start(replies, {
    files: { "src/x.ts": lines("x", 80), "docs/guide.md": lines("guide", 80) },
    // Every final reply flushes (cacheAware off): the first task's reads are stubbed in the second task's requests.
    settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, selfControl: NO_NUDGES } },
  });
}

const settingsRecords = (entries: JsonRecord[]) => entries.filter((e) => e.type === "custom" && e.customType === "context-prune-settings");
/** The tool message of a request that answers the read of `path` (by the call's id in the first request that made it). */
function readOf(requests: ReturnType<typeof agentRequests>, request: number, callId: string): string {
  const found = toolMessages(requests[request - 1]!.body).find((t) => t.id === callId);
  expect(found, `request ${request} carries the result of ${callId}`).toBeDefined();
  return found!.text;
}
/** The tool-call ids of the first request's answer: the guide's read, then x's. */
function readCallIds(entries: JsonRecord[]): { guide: string; x: string } {
  const first = entries.find((e) => e.type === "message" && e.message?.role === "assistant");
  const calls = (first!.message.content as Array<{ type: string; id: string; arguments: { path: string } }>).filter((b) => b.type === "toolCall");
  return { guide: calls.find((c) => c.arguments.path === "docs/guide.md")!.id, x: calls.find((c) => c.arguments.path === "src/x.ts")!.id };
}

/** One agent request's answer, sent once `change` (run when the request has arrived, so the pruner's check before it is done) has changed the files. */
interface HeldReply {
  change?: () => void;
  reply: Reply;
}

/** The agent's answers in order, each held until its change is made: no sleep stands for "Pi is busy now". */
function heldReplies(steps: HeldReply[]): () => Reply | undefined {
  let next = 0;
  return () => {
    const step = steps[next++];
    step?.change?.();
    return step?.reply;
  };
}

const CAT_X = { toolCalls: [{ name: "bash", arguments: { command: "cat src/x.ts" } }] };

function cli(ws: PiWorkspace, args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: ws.agentDir }, cwd: ws.cwd });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("settings changed while Pi runs", () => {
  it("`pi-pruner protect` run by the agent mid-task: the next request sends the guide's earlier read verbatim, and its view says why", async () => {
    const { server, ws } = await setup([
      GUIDE_READ,
      { text: "Read the guide and x." },
      { toolCalls: [{ name: "bash", arguments: { command: PROTECT_GUIDE } }] },
      { text: "The guide is protected now." },
    ]);
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["read the guide and x", "protect the guide, then go on"], timeoutMs: 45_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(4);
    const ids = readCallIds(run.entries);

    // The bash tool ran the command line, which wrote the project's settings file.
    expect(readOf(requests, 4, toolMessages(requests[3]!.body).at(-1)!.id)).toContain("added `**/guide.md` to contextPrune.protectedPaths");
    expect(JSON.parse(readFileSync(join(ws.cwd, ".pi", "settings.json"), "utf8"))).toEqual({ contextPrune: { protectedPaths: ["**/skills/**/*.md", "**/guide.md"] } });

    // Request 2 sent both reads raw; the first task's final reply flushed them, so request 3 sent stubs.
    const guideRaw = readOf(requests, 2, ids.guide);
    expect(guideRaw).toContain("guide line 80:");
    expect(readOf(requests, 3, ids.guide)).toMatch(STUB);
    expect(readOf(requests, 3, ids.x)).toMatch(STUB);
    // The request right after the command: the guide's earlier read, verbatim; x is still a stub.
    expect(readOf(requests, 4, ids.guide)).toBe(guideRaw);
    expect(readOf(requests, 4, ids.x)).toMatch(STUB);

    // The session recorded the new settings once, between request 3's answer and request 4's.
    const records = settingsRecords(run.entries);
    expect(records.map((r) => r.data.config.protectedPaths)).toEqual([["**/skills/**/*.md"], ["**/skills/**/*.md", "**/guide.md"]]);
    const answers = run.entries.filter((e) => e.type === "message" && e.message?.role === "assistant");
    const at = (entry: JsonRecord) => run.entries.indexOf(entry);
    expect(at(records[1]!)).toBeGreaterThan(at(answers[2]!));
    expect(at(records[1]!)).toBeLessThan(at(answers[3]!));

    // The view of request 4 says why: rendered with the settings recorded before it, in which
    // `**/guide.md` protects the read (the summarized read is kept verbatim).
    const view = buildRequestView(parseSessionText(readFileSync(run.sessionFile!, "utf8")), { request: 4, config: DEFAULT_CONFIG });
    expect(view!.settings).toMatchObject({ source: "recorded", entryId: records[1]!.id });
    expect(protectionReason("read", { path: "docs/guide.md" }, view!.settings.config)).toEqual({ kind: "path", pattern: "**/guide.md" });
    expect(view!.stats!.keptProtected).toBe(1);
    const before = buildRequestView(parseSessionText(readFileSync(run.sessionFile!, "utf8")), { request: 3, config: DEFAULT_CONFIG });
    expect(before!.settings).toMatchObject({ source: "recorded", entryId: records[0]!.id });
    expect(before!.stats!.keptProtected).toBe(0);
    const text = cli(ws, ["view", run.sessionFile!, "--request", "4"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("# rendered with the settings the session recorded before this request (by pi-pruner 0.1.0)");
    expect(text.stdout).toContain("guide line 80:");
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });

  it("a settings file broken mid-task: the settings in use stay, one warning names the file, the turn goes on", async () => {
    const BREAK = `printf '{ "contextPrune": { "protectedPaths": [' > .pi/settings.json`;
    const { server, ws } = await setup([
      GUIDE_READ,
      { text: "Read the guide and x." },
      { toolCalls: [{ name: "bash", arguments: { command: PROTECT_GUIDE } }] },
      { toolCalls: [{ name: "bash", arguments: { command: BREAK } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "echo still going" } }] },
      { text: "Done." },
    ]);
    const projectFile = join(ws.cwd, ".pi", "settings.json");
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, sessionId: "broken" });
    let sessionFile: string;
    try {
      await rpc.prompt("read the guide and x");
      const outcome = await rpc.prompt("protect the guide, then break the settings file");
      expect(outcome.events.some((e) => e.type === "agent_end")).toBe(true);
      sessionFile = String((await rpc.getState()).sessionFile);
      const notes = rpc.notifications().filter((n) => n.message.startsWith("pi-pruner:"));
      expect(notes).toEqual([{ message: expect.stringMatching(new RegExp(`^pi-pruner: ${projectFile.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}: not valid JSON \\(.+\\); kept the settings in use until it is fixed$`)), notifyType: "warning" }]);
    } finally {
      const closed = await rpc.close();
      expect(closed.code, closed.stderr).toBe(0);
    }
    expect(readFileSync(projectFile, "utf8")).toBe('{ "contextPrune": { "protectedPaths": [');
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(6);
    const entries = readFileSync(sessionFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as JsonRecord);
    const ids = readCallIds(entries);
    const guideRaw = readOf(requests, 2, ids.guide);
    expect(readOf(requests, 3, ids.guide)).toMatch(STUB);
    // Protected from request 4 on; the broken file (from request 5 on) would have dropped the
    // pattern with the rest of its settings, so the guide would be a stub again: it is not.
    for (const n of [4, 5, 6]) expect(readOf(requests, n, ids.guide), `request ${n}`).toBe(guideRaw);
    expect(requests[5]!.allText).toContain("still going");
    // No record for settings that were not applied.
    expect(settingsRecords(entries).map((r) => r.data.config.protectedPaths)).toEqual([["**/skills/**/*.md"], ["**/skills/**/*.md", "**/guide.md"]]);
    await expectRequestViewsMatch(sessionFile, requests);
  });

  it("the project's .pi deleted and made again, then protectedTools written: the next request sends the just-protected bash output verbatim", async () => {
    const piFolder = (ws: PiWorkspace) => join(ws.cwd, ".pi");
    let workspace: PiWorkspace | undefined;
    const { server, ws } = await pi.start(
      heldReplies([
        { reply: CAT_X },
        // Request 2 has arrived: .pi goes, comes back empty, while Pi waits for the answer.
        {
          change: () => {
            rmSync(piFolder(workspace!), { recursive: true });
            mkdirSync(piFolder(workspace!));
          },
          reply: { text: "Read x." },
        },
        // Request 3 was checked with the new .pi still empty: now the setting is written into it.
        {
          change: () => writeFileSync(join(piFolder(workspace!), "settings.json"), JSON.stringify({ contextPrune: { protectedTools: ["bash"] } })),
          reply: { toolCalls: [{ name: "bash", arguments: { command: "echo next" } }] },
        },
        { reply: { text: "Done." } },
      ]),
      {
        files: { "src/x.ts": lines("x", 80) },
        // A project with settings of its own: .pi is there from the start.
        projectSettings: { contextPrune: { minBatchChars: 200 } },
        settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, selfControl: NO_NUDGES } },
      },
    );
    workspace = ws;
    const run = await runPi({ workspace: ws, extension: EXTENSION, approve: true, prompts: ["read x", "go on"], timeoutMs: 45_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(4);
    const catId = toolMessages(requests[1]!.body)[0]!.id;
    const raw = readOf(requests, 2, catId);
    expect(raw).toContain("x line 80:");
    // The first task's final reply summarized it (nothing protected it then) ...
    expect(readOf(requests, 3, catId)).toMatch(STUB);
    // ... and the request right after the setting was written into the new folder sends it verbatim.
    expect(readOf(requests, 4, catId)).toBe(raw);
    const records = settingsRecords(run.entries);
    // The session recorded the protection once, between request 3's answer and request 4's.
    expect(records.map((r) => r.data.config.protectedTools)).toEqual([[], ["bash"]]);
    const answers = run.entries.filter((e) => e.type === "message" && e.message?.role === "assistant");
    expect(run.entries.indexOf(records[1]!)).toBeGreaterThan(run.entries.indexOf(answers[2]!));
    expect(run.entries.indexOf(records[1]!)).toBeLessThan(run.entries.indexOf(answers[3]!));
    await expectRequestViewsMatch(run.sessionFile!, requests);
  });

  it("a settings file caught empty by a request (a save between its truncate and its write): the settings in force stay, and the session says so for that request", async () => {
    const settingsFile = (ws: PiWorkspace) => join(ws.cwd, ".pi", "settings.json");
    const protectBash = JSON.stringify({ contextPrune: { protectedTools: ["bash"] } });
    let workspace: PiWorkspace | undefined;
    const { server, ws } = await pi.start(
      heldReplies([
        { reply: CAT_X },
        // The save's truncate: request 3 is checked while the file is empty.
        { change: () => writeFileSync(settingsFile(workspace!), ""), reply: { toolCalls: [{ name: "bash", arguments: { command: "echo next" } }] } },
        // The save's write, once request 3 was sent; its answer is the final reply that flushes.
        { change: () => writeFileSync(settingsFile(workspace!), protectBash), reply: { text: "Read x." } },
        { reply: { text: "Done." } },
      ]),
      {
        files: { "src/x.ts": lines("x", 80), ".pi/settings.json": protectBash },
        // Small batches flush: unprotected, the outputs would go to the summarizer at the final reply.
        settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, minBatchChars: 200, selfControl: NO_NUDGES } },
      },
    );
    workspace = ws;
    const run = await runPi({ workspace: ws, extension: EXTENSION, approve: true, prompts: ["read x", "go on"], timeoutMs: 45_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(4);
    // Nothing was sent to the summarizer: both bash outputs stayed protected throughout.
    expect(server.requests.filter(isSummarizerRequest).flatMap(refsAsked)).toEqual([]);
    const catId = toolMessages(requests[1]!.body)[0]!.id;
    expect(readOf(requests, 4, catId)).toBe(readOf(requests, 2, catId));
    // The empty file was never applied: one record, protecting bash, and request 3 (checked while
    // the file was empty) is shown with it.
    expect(settingsRecords(run.entries).map((r) => r.data.config.protectedTools)).toEqual([["bash"]]);
    const view = buildRequestView(parseSessionText(readFileSync(run.sessionFile!, "utf8")), { request: 3, config: DEFAULT_CONFIG });
    expect(view!.settings.config.protectedTools).toEqual(["bash"]);
  });

  it.skipIf(!existsSync("/proc/self/pagemap"))("the settings file replaced by a link to /proc/self/pagemap mid-task: the next request goes out, one warning names the file, the run ends normally", async () => {
    let workspace: PiWorkspace | undefined;
    const projectFile = (ws: PiWorkspace) => join(ws.cwd, ".pi", "settings.json");
    const { server, ws } = await pi.start(
      heldReplies([
        { reply: CAT_X },
        {
          change: () => {
            rmSync(projectFile(workspace!));
            symlinkSync("/proc/self/pagemap", projectFile(workspace!));
          },
          reply: { toolCalls: [{ name: "bash", arguments: { command: "echo still going" } }] },
        },
        { reply: { text: "Done." } },
      ]),
      {
        files: { "src/x.ts": lines("x", 80), ".pi/settings.json": JSON.stringify({ contextPrune: { protectedTools: ["bash"] } }) },
        settings: { contextPrune: { pruneOn: "agent-message", cacheAware: false, selfControl: NO_NUDGES } },
      },
    );
    workspace = ws;
    const rpc = await startPiRpc({ workspace: ws, extension: EXTENSION, approve: true, sessionId: "pagemap", timeoutMs: 30_000 });
    let ended: boolean;
    let notes: Array<{ message: string; notifyType: string }>;
    let closed: Awaited<ReturnType<typeof rpc.close>>;
    try {
      // Within 10 s: a check that reads the link on holds the turn until the memory runs out.
      const outcome = await rpc.prompt("read x, then go on", { timeoutMs: 10_000 });
      ended = outcome.events.some((e) => e.type === "agent_end");
      notes = rpc.notifications().filter((n) => n.message.startsWith("pi-pruner:"));
    } finally {
      closed = await rpc.close();
    }
    expect(ended).toBe(true);
    expect(closed.code, closed.stderr).toBe(0);
    expect(notes).toEqual([{ message: `pi-pruner: ${projectFile(ws)}: cannot read: not a regular file; kept the settings in use until it is fixed`, notifyType: "warning" }]);
    const requests = agentRequests(server.requests);
    expect(requests).toHaveLength(3);
    expect(requests[2]!.allText).toContain("still going");
  });
});
