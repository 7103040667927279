// Live update: while Pi appends to a session file, the open session's tree follows within a second
// by reading only the appended bytes; new session files appear; the status bar follows the
// selected session. And the fast append path agrees with a full rebuild, line by line.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { readSessionFile, readSessionTail } from "../../../core/src/session/session-reader.ts";
import { buildSessionView, type SessionView } from "../../../core/src/view/session-view.ts";
import { appendToSessionView } from "../../../core/src/view/view-append.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { badLinesSession, branchedSession, chainSession, largeSession, prunedSession } from "../fixtures/sessions.ts";
import { children, extensionApi, find, freshAgent, sessionDirName, tempDir, useAgentDir, waitFor, workspaceDir, type SuiteAgent } from "./helpers.ts";

/** JSONL lines that continue a session from `parentId`: a prompt, a read and its result, a reply. */
function turn(parentId: string, n: number, at: number, readPath = "src/parser.ts"): { lines: string; lastId: string; callId: string; resultTimestamp: number } {
  const id = (k: string) => `live-${n}-${k}`;
  const iso = (t: number) => new Date(t).toISOString();
  const callId = `live_call_${n}`;
  const entries = [
    { type: "message", id: id("u"), parentId, timestamp: iso(at), message: { role: "user", content: `live prompt ${n}`, timestamp: at } },
    { type: "message", id: id("a"), parentId: id("u"), timestamp: iso(at + 1), message: { role: "assistant", content: [{ type: "toolCall", id: callId, name: "read", arguments: { path: readPath } }], timestamp: at + 1, stopReason: "toolUse" } },
    { type: "message", id: id("r"), parentId: id("a"), timestamp: iso(at + 2), message: { role: "toolResult", toolCallId: callId, toolName: "read", content: [{ type: "text", text: `contents ${n}\n`.repeat(50) }], isError: false, timestamp: at + 2 } },
    { type: "message", id: id("f"), parentId: id("r"), timestamp: iso(at + 3), message: { role: "assistant", content: [{ type: "text", text: `done ${n}` }], timestamp: at + 3, stopReason: "stop" } },
  ];
  return { lines: entries.map((e) => JSON.stringify(e) + "\n").join(""), lastId: id("f"), callId, resultTimestamp: at + 2 };
}

describe("live update", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api);
  });
  after(() => api.selectSession(undefined));

  it("appending a turn updates the open session within a second, reading only the appended bytes", async () => {
    const file = agent.files.pruned;
    await api.selectSession(file);
    const before = api.store.get(file)!;
    const data = before.data!;
    const status = api.status.text;
    assert.match(status ?? "", /^\$\(fold\) \d+(\.\d)?k? → \d+(\.\d)?k? \(-\d+%\)$/);
    const callsBefore = before.view!.calls.length;
    const bytesBefore = data.bytes;

    const t = turn(before.view!.leafId!, 1, Date.UTC(2025, 5, 1));
    const started = performance.now();
    fs.appendFileSync(file, t.lines);
    const view = await waitFor(() => {
      const v = api.store.get(file)?.view;
      return v && v.calls.length === callsBefore + 1 ? v : undefined;
    }, "the appended call to reach the view", 1000).catch((e) => {
      throw new Error(`${e.message}; store: ${JSON.stringify({ marks: api.store.marks, calls: api.store.get(file)?.view?.calls.length, error: api.store.get(file)?.error })}`);
    });
    const took = performance.now() - started;
    console.log(`      appended turn shown after ${took.toFixed(0)} ms (watcher + tail read + view update)`);

    assert.equal(api.store.get(file)!.data, data, "the parsed session was extended, not read again");
    assert.equal(data.bytes, bytesBefore + Buffer.byteLength(t.lines));
    const last = api.store.marks.lastAppend!;
    assert.equal(last.path, file);
    assert.equal(last.fastPath, true);
    assert.equal(view.leafId, t.lastId);
    assert.equal(view.calls.at(-1)!.state, "raw");
    await waitFor(() => api.status.text !== status, "the status bar to follow the selected session", 1000);
    // The fast path estimates the characters sent; the exact figure follows within about a second.
    const exact = buildSessionView(data, { config: api.store.configFor(api.store.get(file)!) }).totals;
    await waitFor(() => !api.store.get(file)!.modelCharsEstimated, "the exact model characters", 3000);
    assert.deepEqual(api.store.get(file)!.view!.totals, exact);
  });

  it("a session slow to build gets its exact totals at most a tenth of the time while Pi writes", async () => {
    const file = agent.files.pruned;
    const state = api.store.get(file)!;
    // As if its last full build had taken 250 ms (a session of some 60 MB): exact totals wait 2.5 s.
    state.lastBuildMs = 250;
    const t = turn(state.view!.leafId!, 5, Date.UTC(2025, 5, 5));
    fs.appendFileSync(file, t.lines);
    await waitFor(() => api.store.get(file)?.view?.leafId === t.lastId, "the append to be applied", 2000);
    const applied = performance.now();
    assert.equal(api.store.get(file)!.modelCharsEstimated, true);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(api.store.get(file)!.modelCharsEstimated, true, "still the estimate 1.5 s later");
    await waitFor(() => !api.store.get(file)!.modelCharsEstimated, "the exact model characters", 4000);
    const waited = performance.now() - applied;
    assert.ok(waited >= 2000, `exact totals after ${waited.toFixed(0)} ms`);
  });

  it("a batch the pruner summarizes appears under the session's summaries within a second", async () => {
    const file = agent.files.pruned;
    const state = api.store.get(file)!;
    const leaf = state.view!.leafId!;
    const t = turn(leaf, 2, Date.UTC(2025, 5, 2), "src/lexer.ts");
    fs.appendFileSync(file, t.lines);
    await waitFor(() => api.store.get(file)?.view?.leafId === t.lastId, "the turn to be read", 1000);
    const iso = new Date(Date.UTC(2025, 5, 2, 1)).toISOString();
    const pruner = [
      { type: "custom", id: "live-index", parentId: t.lastId, timestamp: iso, customType: "context-prune-index", data: { toolCalls: [{ toolCallId: t.callId, toolName: "read", args: { path: "src/lexer.ts" }, resultText: "contents 2", isError: false, turnIndex: 3, resultTimestamp: t.resultTimestamp }], refs: [{ shortId: "t3", toolCallId: t.callId, resultTimestamp: t.resultTimestamp }] } },
      { type: "custom_message", id: "live-summary", parentId: "live-index", timestamp: iso, customType: "context-prune-summary", content: "- `t3` read src/lexer.ts: the lexer, fifty lines", display: false, details: { toolCallRefs: [{ shortId: "t3", toolCallId: t.callId, resultTimestamp: t.resultTimestamp }], toolNames: ["read"], turnIndex: 3 } },
    ];
    const started = performance.now();
    fs.appendFileSync(file, pruner.map((e) => JSON.stringify(e) + "\n").join(""));
    await waitFor(() => api.store.get(file)?.view?.summaries.length === 2, "the new summary to reach the view", 1000);
    console.log(`      new summary shown after ${(performance.now() - started).toFixed(0)} ms (full rebuild: pruner entries)`);
    assert.equal(api.store.marks.lastAppend!.fastPath, false);
    const top = await children(api.sessionsTree, api.sessionsTree.sessionNode(file));
    const summaries = await children(api.sessionsTree, find(top, "Summaries").node);
    assert.deepEqual(
      summaries.map((s) => s.label),
      ["fix the build · 2 calls", "live prompt 2 · 1 call"],
    );
    const calls = await children(api.sessionsTree, summaries[1]!.node);
    assert.deepEqual(
      calls.map((c) => c.description),
      ["t3 · summarized · 550 chars"],
    );
  });

  it("a new session file appears in the list within a second", async () => {
    const file = path.join(agent.sessionDir, "2025-06-01T00-00-00-000Z_s-new.jsonl");
    const count = api.store.sessions().length;
    const started = performance.now();
    fs.writeFileSync(file, prunedSession(workspaceDir()).text.replace('"id":"s-view"', '"id":"s-new"'));
    await waitFor(() => api.store.sessions().length === count + 1, "the new session to be listed", 1000);
    console.log(`      new session listed after ${(performance.now() - started).toFixed(0)} ms`);
    assert.equal(api.store.sessions()[0]!.file.path, file, "the newest file comes first");
  });

  it("the first session of a workspace appears, though its folder did not exist yet", async () => {
    const empty = tempDir("pi-pruner-first-");
    await useAgentDir(api, empty);
    assert.equal(api.store.state, "noSessions");
    try {
      const dir = path.join(empty, "sessions", sessionDirName(workspaceDir()));
      fs.mkdirSync(dir, { recursive: true });
      const started = performance.now();
      fs.writeFileSync(path.join(dir, "2025-06-02T00-00-00-000Z_s-first.jsonl"), prunedSession(workspaceDir()).text);
      await waitFor(() => api.store.state === "ready", "the first session to be listed", 5000);
      console.log(`      first session listed after ${(performance.now() - started).toFixed(0)} ms (folder watch)`);
      // Its folder is now watched directly: an append shows at once.
      const file = api.store.sessions()[0]!.file.path;
      await api.store.load(file);
      const t = turn(api.store.get(file)!.view!.leafId!, 9, Date.UTC(2025, 5, 3));
      fs.appendFileSync(file, t.lines);
      await waitFor(() => api.store.get(file)?.view?.leafId === t.lastId, "the append to the first session", 1000);
    } finally {
      await useAgentDir(api, agent.agentDir);
    }
  });

  it("a file that was rewritten shorter is read again from the start", async () => {
    const file = agent.files.branched;
    await api.store.load(file);
    fs.writeFileSync(file, badLinesSession(workspaceDir()).text);
    await waitFor(() => api.store.get(file)?.view?.session.id === "s-bad", "the rewritten file to be read again", 2000);
    const view = api.store.get(file)!.view!;
    assert.equal(view.errors.length, 3);
    assert.deepEqual(
      view.calls.map((c) => c.path),
      ["README.md"],
    );
  });

  it("the fast append path gives exactly the view a full rebuild gives, after every line of every fixture", async () => {
    const cwd = workspaceDir();
    const dir = tempDir("pi-pruner-append-");
    const fixtures = {
      pruned: prunedSession(cwd).text,
      chain: chainSession(cwd, dir).text,
      branched: branchedSession(cwd).text,
      bad: badLinesSession(cwd).text,
      large: largeSession(cwd, 40_000).text,
    };
    let fast = 0;
    let rebuilt = 0;
    for (const [name, text] of Object.entries(fixtures)) {
      const lines = text.split(/(?<=\n)/);
      // start from a few cut points; append the rest one line at a time
      for (const cut of [2, Math.floor(lines.length / 2), lines.length - 1]) {
        const file = path.join(dir, `${name}-${cut}.jsonl`);
        fs.writeFileSync(file, lines.slice(0, cut).join(""));
        const data = await readSessionFile(file);
        let view = buildSessionView(data, { config: DEFAULT_CONFIG });
        let estimated = false;
        for (const line of lines.slice(cut)) {
          fs.appendFileSync(file, line);
          const tail = await readSessionTail(file, data);
          const expected = buildSessionView(data, { config: DEFAULT_CONFIG });
          const applied = tail.reset ? undefined : appendToSessionView(view, data, tail.entries, DEFAULT_CONFIG);
          if (applied) {
            fast++;
            // Everything is exact but the characters the model is sent (and the reason given when they exceed raw), which the fast path estimates and flags.
            estimated ||= applied.modelCharsEstimated;
            const comparable: typeof expected = estimated ? { ...expected, totals: estimatedTotals(expected.totals, applied.view.totals) } : expected;
            assert.deepEqual(applied.view, comparable, `${name}, cut at ${cut}: fast path after line ${JSON.stringify(line.slice(0, 80))}`);
            view = applied.view;
          } else {
            rebuilt++;
            view = expected;
            estimated = false;
          }
        }
      }
    }
    console.log(`      ${fast} appends took the fast path, ${rebuilt} needed a rebuild; every fast one matched the rebuild`);
    assert.ok(fast > rebuilt, "most appends take the fast path");
  });
});

/** The rebuild's totals with the figures the fast path estimates taken from the fast path's. */
function estimatedTotals(exact: SessionView["totals"], estimate: SessionView["totals"]): SessionView["totals"] {
  const { excess: _excess, ...rest } = exact;
  return { ...rest, modelChars: estimate.modelChars, ...(estimate.excess !== undefined ? { excess: estimate.excess } : {}) };
}
