// Search across sessions, in the real extension host: the Search Sessions command finds words in
// prompts, replies, call arguments and outputs (outputs read back from disk), shows them grouped by
// session, and each result opens the call's document or the model view at the message. The scan
// can be cancelled, leaves the store's lazily read sessions lazy, and reads a changed file again.
// The last test is the speed figure: search over the load test's agent dir (PI_PRUNER_SEARCH_BENCH
// sets its size; test/vscode/search-bench.mjs runs 500 sessions, CI runs 100).
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { monitorEventLoopDelay, performance, PerformanceObserver } from "node:perf_hooks";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SearchNode } from "../../../vscode-extension/src/search/search-tree.ts";
import { prunedSession, writeSession } from "../fixtures/sessions.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { children, closeAllEditors, extensionApi, find, freshAgent, sessionDirName, tempDir, useAgentDir, waitFor, workspaceDir } from "./helpers.ts";

const NEEDLE = "zanzibarquux";
/** A word far into a long call's arguments and a long reply (neither left on disk), past their previews. */
const DEEP = "marzipanvolt";
const FILLER = Array.from({ length: 60 }, (_, i) => `note ${i} on the release`).join(", ");

/** Two sessions: one whose read output (long, so left on disk) holds the word, one whose reply does. */
function writeSearchSessions(sessionDir: string, cwd: string): { withOutput: string; withReply: string; resultEntryId: string } {
  const log = Array.from({ length: 300 }, (_, i) => `line ${i} of the build log`);
  log[250] = `error: ${NEEDLE} is not defined`;
  const a = new SessionBuilder({ sessionId: "s-search-a", cwd, startTime: Date.UTC(2025, 2, 1) })
    .user("run the build and look at the failures")
    .toolUse("bash", { command: "npm run build" }, log.join("\n"))
    .assistant("the build fails on one undefined name")
    .user("write it down")
    .toolUse("write", { path: "notes.md", content: `${FILLER}; the ${DEEP} flag stays off` }, "written")
    .assistant(`${FILLER}. In short: turn the ${DEEP} flag off.`);
  const resultEntryId = a.entries.find((e) => (e as { message?: { role?: string } }).message?.role === "toolResult")!.id;
  const b = new SessionBuilder({ sessionId: "s-search-b", cwd, startTime: Date.UTC(2025, 2, 2) })
    .user("what is the project's codename?")
    .assistant(`The codename is ${NEEDLE}, as the readme says.`)
    .user("thanks")
    .assistant("you are welcome");
  const withOutput = writeSession(sessionDir, { file: "2025-03-01T00-00-00-000Z_s-search-a.jsonl", text: a.toJsonl() }, new Date(Date.UTC(2025, 2, 1)));
  const withReply = writeSession(sessionDir, { file: "2025-03-02T00-00-00-000Z_s-search-b.jsonl", text: b.toJsonl() }, new Date(Date.UTC(2025, 2, 2)));
  return { withOutput, withReply, resultEntryId };
}

async function resultGroups(api: PiPrunerApi) {
  const top = await children<SearchNode>(api.searchTree);
  const groups = [];
  for (const row of top.filter((r) => r.node.kind === "session")) groups.push({ row, hits: await children<SearchNode>(api.searchTree, row.node) });
  return { top, groups };
}

describe("search across sessions", () => {
  let api: PiPrunerApi;
  let files: { withOutput: string; withReply: string; resultEntryId: string };

  before(async () => {
    api = await extensionApi();
    const agentDir = tempDir("pi-pruner-search-");
    files = writeSearchSessions(path.join(agentDir, "sessions", sessionDirName(workspaceDir())), workspaceDir());
    await useAgentDir(api, agentDir);
  });
  after(async () => {
    await vscode.commands.executeCommand("piPruner.clearSearch");
    await closeAllEditors();
    await freshAgent(api);
  });

  it("finds a word in a tool's output and in a reply, grouped by session, each result naming what it is", async () => {
    await vscode.commands.executeCommand("piPruner.searchSessions", NEEDLE);
    const { top, groups } = await resultGroups(api);
    assert.deepEqual(
      top.map((r) => r.node.kind),
      ["session", "session"],
      "one row per session with a hit, no status row once the scan is done",
    );
    const byFile = new Map(groups.map((g) => [(g.row.node as { file: string }).file, g]));
    const output = byFile.get(files.withOutput)!;
    const reply = byFile.get(files.withReply)!;
    assert.equal(output.row.label, "run the build and look at the failures");
    assert.equal(output.row.description, "1 hit");
    assert.deepEqual(output.hits.map((h) => h.description), ["output bash"]);
    assert.equal(reply.row.label, "what is the project's codename?");
    assert.deepEqual(reply.hits.map((h) => h.description), ["reply"]);
    assert.match(reply.hits[0]!.label, new RegExp(`The codename is ${NEEDLE}`));
  });

  it("words deep in an output, a call's arguments and a reply show in their results, cut to begin near them and highlighted", async () => {
    for (const [word, kinds] of [
      [NEEDLE, ["output bash"]],
      [DEEP, ["call write", "reply"]],
    ] as const) {
      await vscode.commands.executeCommand("piPruner.searchSessions", word);
      const { groups } = await resultGroups(api);
      const hits = groups.find((g) => (g.row.node as { file: string }).file === files.withOutput)!.hits;
      assert.deepEqual(hits.map((h) => h.description).sort(), [...kinds].sort());
      for (const hit of hits) {
        const label = hit.item.label as vscode.TreeItemLabel;
        assert.ok(label.label.startsWith("…"), `the line begins near the word, not at the part's start: ${label.label}`);
        assert.deepEqual((label.highlights ?? []).map(([a, b]) => label.label.slice(a, b)), [word], label.label);
      }
    }
  });

  it("a prefix of the word finds it too; a word in no session shows that nothing was found", async () => {
    await vscode.commands.executeCommand("piPruner.searchSessions", "zanzib");
    const { groups } = await resultGroups(api);
    assert.equal(groups.length, 2);
    await vscode.commands.executeCommand("piPruner.searchSessions", "xylophonewhale");
    const top = await children<SearchNode>(api.searchTree);
    assert.deepEqual(top.map((r) => r.label), ['No results for "xylophonewhale"']);
  });

  it("an output's result opens the call's document with the full output; a reply's opens the model view", async () => {
    await vscode.commands.executeCommand("piPruner.searchSessions", NEEDLE);
    const { groups } = await resultGroups(api);
    const outputHit = groups.find((g) => (g.row.node as { file: string }).file === files.withOutput)!.hits[0]!;
    await closeAllEditors();
    await vscode.commands.executeCommand(outputHit.item.command!.command, ...(outputHit.item.command!.arguments ?? []));
    const callDoc = await waitFor(() => vscode.window.activeTextEditor?.document, "the call's document");
    assert.equal(callDoc.uri.scheme, "pi-pruner");
    assert.equal(JSON.parse(callDoc.uri.query).kind, "call");
    assert.match(callDoc.getText(), new RegExp(`error: ${NEEDLE} is not defined`));
    assert.match(callDoc.getText(), /line 299 of the build log/);

    const replyHit = groups.find((g) => (g.row.node as { file: string }).file === files.withReply)!.hits[0]!;
    await vscode.commands.executeCommand(replyHit.item.command!.command, ...(replyHit.item.command!.arguments ?? []));
    const modelDoc = await waitFor(() => {
      const doc = vscode.window.activeTextEditor?.document;
      return doc && doc.uri.query.includes('"model"') ? doc : undefined;
    }, "the model view");
    // The reply was first sent with the second request (the one answering "thanks").
    assert.equal(JSON.parse(modelDoc.uri.query).request, 2);
    assert.match(modelDoc.getText(), new RegExp(`The codename is ${NEEDLE}`));
    await closeAllEditors();
  });

  it("the store's session stays read lazily: its output is still a stand-in in memory after the scan", async () => {
    const state = await api.store.load(files.withOutput);
    assert.ok(state?.data?.elided?.has(files.resultEntryId), "the output's line is left on disk");
    const result = state!.data!.byId.get(files.resultEntryId) as unknown as { message: { content: { text: string }[] } };
    assert.doesNotMatch(result.message.content[0]!.text, new RegExp(NEEDLE));
  });

  it("a session Pi wrote to since is read again: a new prompt is found", async () => {
    const line = JSON.stringify({ type: "message", id: "late1", parentId: "e4", timestamp: new Date().toISOString(), message: { role: "user", content: "now add the marmalade feature", timestamp: Date.now() } });
    fs.appendFileSync(files.withReply, line + "\n");
    await api.store.refresh();
    await api.settled();
    await vscode.commands.executeCommand("piPruner.searchSessions", "marmalade");
    const { groups } = await resultGroups(api);
    assert.deepEqual(groups.map((g) => g.hits.map((h) => h.description)), [["prompt"]]);
    assert.match(groups[0]!.hits[0]!.label, /now add the marmalade feature/);
  });

  it("Clear Search empties the results", async () => {
    await vscode.commands.executeCommand("piPruner.clearSearch");
    assert.deepEqual(await children<SearchNode>(api.searchTree), []);
  });
});

interface SearchBenchSpec {
  sessions: number;
}

function benchSpec(): SearchBenchSpec {
  const given = process.env.PI_PRUNER_SEARCH_BENCH;
  const match = given ? /^sessions=(\d+)$/.exec(given) : null;
  if (given && !match) throw new Error(`PI_PRUNER_SEARCH_BENCH: expected sessions=N, got ${given}`);
  return { sessions: match ? Number(match[1]) : 100 };
}

/** A word put deep in each load-test session's long read outputs, past their previews: its hits are read back. */
const DEEP_WORD = "quillwort";
const ms = (ns: number) => ns / 1e6;
const f1 = (n: number) => n.toFixed(1);

describe("search: the load test's agent dir", () => {
  const spec = benchSpec();
  let api: PiPrunerApi;

  before(async () => {
    api = await extensionApi();
  });
  after(async () => {
    await vscode.commands.executeCommand("piPruner.clearSearch");
    await freshAgent(api);
  });

  it(`${spec.sessions} sessions: first results soon, the scan bounded, the host responsive`, async function () {
    this.timeout(240_000);
    const cwd = workspaceDir();
    const agentDir = tempDir("pi-pruner-search-load-");
    const sessionDir = path.join(agentDir, "sessions", sessionDirName(cwd));
    // The load test's sessions: the shared pruned fixture, one copy per session id, with a word deep
    // in its read outputs (all A's, left on disk) in place of some of the A's.
    const base = prunedSession(cwd);
    const outputA = "A".repeat(1200);
    assert.ok(base.text.includes(outputA));
    const deepOutput = `${"A".repeat(800)} ${DEEP_WORD} ${"A".repeat(1200 - 802 - DEEP_WORD.length)}`;
    base.text = base.text.replaceAll(outputA, deepOutput);
    const old = Date.UTC(2025, 0, 1);
    let bytes = 0;
    for (let i = 0; i < spec.sessions; i++) {
      const id = `s-load-${i}`;
      const text = base.text.replace('"id":"s-view"', `"id":"${id}"`);
      bytes += Buffer.byteLength(text);
      writeSession(sessionDir, { file: `2025-01-01T00-00-00-000Z_${id}.jsonl`, text }, new Date(old + i * 60_000));
    }
    await useAgentDir(api, agentDir);
    assert.equal(api.store.sessions().length, spec.sessions);

    // A word of every session's prompt, call arguments and reply.
    const query = "build";
    // The host's own delay with nothing of ours running, for context on a shared machine.
    const idle = monitorEventLoopDelay({ resolution: 10 });
    idle.enable();
    await new Promise((r) => setTimeout(r, 1000));
    idle.disable();
    let firstResultsMs: number | undefined;
    const loop = monitorEventLoopDelay({ resolution: 10 });
    const started = performance.now();
    const sub = api.search.onDidChange((r) => {
      if (firstResultsMs === undefined && r.hits.length > 0) firstResultsMs = performance.now() - started;
    });
    // Garbage-collection pauses during the scan: a part of the delay no code of ours runs in.
    const gcPauses: number[] = [];
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcPauses.push(e.duration);
    });
    gcObserver.observe({ entryTypes: ["gc"] });
    loop.enable();
    const heapBefore = process.memoryUsage().heapUsed;
    try {
      await vscode.commands.executeCommand("piPruner.searchSessions", query);
    } finally {
      loop.disable();
      gcObserver.disconnect();
      sub.dispose();
    }
    const completedMs = performance.now() - started;
    const results = api.search.results!;
    const top = await children<SearchNode>(api.searchTree);

    // The read-back alone: a word past the previews, the index already complete, so what runs is
    // the best hits' lines read back for their snippets.
    const deepLoop = monitorEventLoopDelay({ resolution: 10 });
    const deepStarted = performance.now();
    deepLoop.enable();
    try {
      await vscode.commands.executeCommand("piPruner.searchSessions", DEEP_WORD);
    } finally {
      deepLoop.disable();
    }
    const deepMs = performance.now() - deepStarted;
    // The hits read back: the best 60 (the search's SNIPPETS_READ_BACK).
    const readBack = api.search.results!.hits.slice(0, 60);
    const highlighted = readBack.filter((h) => h.snippet.highlights.some(([a, b]) => h.snippet.text.slice(a, b).toLowerCase() === DEEP_WORD)).length;
    const figures = {
      sessions: spec.sessions,
      sessionMB: bytes / 1024 / 1024,
      indexedParts: api.search.index.indexedParts,
      firstResultsMs: firstResultsMs ?? NaN,
      completedMs,
      loopDelay: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) },
      idleDelay: { p50: ms(idle.percentile(50)), p99: ms(idle.percentile(99)), max: ms(idle.max) },
      gcPausesMs: { count: gcPauses.length, max: gcPauses.length ? Math.max(...gcPauses) : 0, over16: gcPauses.filter((d) => d > 16).length },
      heapGrowthMB: (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024,
      hits: results.hits.length,
      sessionsWithHits: top.filter((r) => r.node.kind === "session").length,
      readBack: { hits: readBack.length, highlighted, ms: deepMs, loopDelay: { p50: ms(deepLoop.percentile(50)), p99: ms(deepLoop.percentile(99)), max: ms(deepLoop.max) } },
    };
    console.log(`      ${spec.sessions} sessions (${f1(figures.sessionMB)} MB), ${figures.indexedParts} parts indexed`);
    console.log(`      SEARCH: first results ${f1(figures.firstResultsMs)} ms, complete ${f1(completedMs)} ms; event-loop delay p50 ${f1(figures.loopDelay.p50)} ms, p99 ${f1(figures.loopDelay.p99)} ms, max ${f1(figures.loopDelay.max)} ms; heap +${f1(figures.heapGrowthMB)} MB`);
    console.log(`      READ-BACK: ${highlighted} of ${readBack.length} hits past the preview shown highlighted after ${f1(deepMs)} ms; event-loop delay p99 ${f1(figures.readBack.loopDelay.p99)} ms, max ${f1(figures.readBack.loopDelay.max)} ms`);
    console.log(`      idle host before: p99 ${f1(figures.idleDelay.p99)} ms; GC pauses during the scan: ${gcPauses.length}, max ${f1(figures.gcPausesMs.max)} ms, ${figures.gcPausesMs.over16} over 16 ms`);
    console.log(`      @@search-figures@@${JSON.stringify(figures)}`);

    assert.equal(results.indexed, spec.sessions, "every session indexed");
    assert.ok(figures.sessionsWithHits > 0, "results grouped by session");
    assert.equal(find(top, /./).node.kind, "session");
    assert.equal(readBack.length, 60, "a hit past the preview in every session's two read outputs");
    assert.equal(highlighted, readBack.length, "every hit read back shows the word highlighted");
    // Bounds loose enough for a busy CI machine; the figures above are what matters.
    assert.ok(figures.firstResultsMs < 5000, `first results after ${f1(figures.firstResultsMs)} ms`);
    assert.ok(figures.loopDelay.p99 < 250, `event-loop delay p99 ${f1(figures.loopDelay.p99)} ms`);
  });

  it("a scan cancelled part way keeps what it read, and the next search finishes it", async () => {
    await vscode.commands.executeCommand("piPruner.clearSearch");
    api.search.index.clear();
    const listed = api.store.sessions().length;
    // Cancelled as soon as the first results are shown, as a person would from the progress notification.
    const sub = api.search.onDidChange((r) => {
      if (r.indexed > 0) api.search.cancel();
    });
    try {
      await vscode.commands.executeCommand("piPruner.searchSessions", "build");
    } finally {
      sub.dispose();
    }
    const partial = api.search.results!.indexed;
    assert.ok(partial < listed, `cancelled after ${partial} of ${listed}`);
    await vscode.commands.executeCommand("piPruner.searchSessions", "build");
    assert.equal(api.search.results!.indexed, listed);
  });
});
