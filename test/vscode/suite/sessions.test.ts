// The Sessions view in a real extension host, over fixture sessions: one written by our pruner
// through the real `pi`, one with a summary, spill, duplicate, protected read and the agent's
// markers, one with a compressed chain and a compaction, one with branches, one with bad lines.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { getBranch } from "../../../core/src/session/session-reader.ts";
import { modelRequests } from "../../../core/src/view/request-views.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { children, extensionApi, find, freshAgent, ScriptedPrompter, tempDir, tooltipText, useAgentDir, workspaceDir, type ShownItem, type SuiteAgent } from "./helpers.ts";

type Items = ShownItem<SessionNode>[];

describe("Sessions view", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  let sessions: Items;

  const sessionItem = (file: string) => {
    const found = sessions.find((s) => s.node.path === file);
    assert.ok(found, `no session item for ${file}`);
    return found;
  };
  const open = (node?: SessionNode) => children(api.sessionsTree, node);

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api, { withPiSession: true });
    sessions = await open();
  });

  after(() => api.setPrompter(undefined));

  it("lists the workspace's sessions newest first, each with its name or first prompt, age and reclaim", async () => {
    const files = [agent.files.bad, agent.files.branched, agent.files.chain, agent.files.pruned, agent.files.pi];
    assert.deepEqual(
      sessions.map((s) => s.node.path),
      files,
    );
    assert.deepEqual(
      sessions.map((s) => s.label),
      // Whole names: the row cuts them where the side bar ends, and none begins like another.
      ["look at the broken session", "try two approaches", "Parser refactor", "fix the build", "read the release skill and the parser sources"],
    );
    const pruned = sessionItem(agent.files.pruned);
    // age · reclaim in estimated tokens (raw → sent)
    assert.match(pruned.description, /^(\d+(s|min|h|d) ago|[A-Z][a-z]{2} \d+) · \d+(\.\d)?[kM]?→\d+(\.\d)?[kM]?$/);
    const view = api.store.get(agent.files.pruned)!.view!;
    assert.ok(view.totals.modelChars! < view.totals.rawChars, "the pruned session sends less than its raw size");
    assert.match(tooltipText(pruned.item), /characters raw → .* sent/);
    assert.equal(api.store.state, "ready");
  });

  it("a session shows its summaries with their pruned calls, spilled calls, protected calls and markers", async () => {
    const top = await open(sessionItem(agent.files.pruned).node);
    assert.deepEqual(
      top.map((i) => i.label),
      ["Model view", "Summaries", "Pruned without a summary", "Protected calls", "Self-control markers"],
    );
    const summaries = await open(find(top, "Summaries").node);
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]!.label, "fix the build · 2 calls");
    assert.match(summaries[0]!.description, /t2 read src\/a\.ts: all A's/);
    const calls = await open(summaries[0]!.node);
    assert.deepEqual(
      calls.map((c) => [c.label, c.description]),
      [
        ["read src/a.ts", "t2 · summarized · 1,200 chars"],
        ["read src/a.ts", "t2 · duplicate of t2 · 1,200 chars"],
      ],
    );
    assert.equal((calls[0]!.item.iconPath as vscode.ThemeIcon).id, "fold");
    assert.equal((calls[1]!.item.iconPath as vscode.ThemeIcon).id, "copy");

    const other = await open(find(top, "Pruned without a summary").node);
    assert.deepEqual(
      other.map((c) => [c.label, c.description]),
      // Its spill path names a file that exists nowhere in the session's blobs folder, but the
      // session file holds the output, all 80,000 bytes the spill had: it can be recovered.
      [["bash npm run build", "t1 · spilled · 80,000 chars"]],
    );
    assert.equal((other[0]!.item.iconPath as vscode.ThemeIcon).id, "save-as");

    const protectedCalls = await open(find(top, "Protected calls").node);
    assert.deepEqual(
      protectedCalls.map((c) => [c.label, c.description]),
      [["read skills/gate/SKILL.md", "protected · 27 chars"]],
    );
    assert.equal((protectedCalls[0]!.item.iconPath as vscode.ThemeIcon).id, "shield");

    const markers = await open(find(top, "Self-control markers").node);
    assert.deepEqual(
      markers.map((m) => [m.label, m.description]),
      [
        ["shrink m1", "active · the result of tool call c1 · not shown: its message is protected output, which is never shrunk"],
        ["rewind m2", "cancelled (person) · last_tool_call_group · 2 entries named"],
        ["checkpoint before-refactor", "set"],
      ],
    );
  });

  it("a session written by our pruner through the real pi shows its summary, duplicate, spill and protected read", async () => {
    const top = await open(sessionItem(agent.files.pi).node);
    assert.deepEqual(
      top.map((i) => i.label),
      ["Model view", "Summaries", "Pruned without a summary", "Protected calls"],
    );
    const summaries = await open(find(top, "Summaries").node);
    assert.equal(summaries.length, 1);
    const calls = await open(summaries[0]!.node);
    assert.deepEqual(
      calls.map((c) => c.description.split(" · ").slice(0, 2).join(" · ")),
      ["t1 · summarized", "t2 · summarized", "t1 · duplicate of t1"],
    );
    assert.deepEqual(
      calls.map((c) => c.label),
      ["read src/parser.ts", "read src/lexer.ts", "read src/parser.ts"],
    );
    const other = await open(find(top, "Pruned without a summary").node);
    assert.deepEqual(
      other.map((c) => [c.label, c.description]),
      [["fetch_page", "t3 · spilled · 70,000 chars"]],
    );
    const protectedCalls = await open(find(top, "Protected calls").node);
    assert.deepEqual(
      protectedCalls.map((c) => c.label),
      ["read skills/release/SKILL.md"],
    );
    const model = find(top, "Model view");
    assert.match(model.description, /^last request sent · (\d+) of \1$/);
    assert.match(tooltipText(model.item), /The next request \(what the model is sent when the session goes on from here\): [\d,]+ → [\d,]+ characters -\d+%$/);
  });

  it("a compressed chain lists its calls and protected outputs, and Pi's compaction is shown as what it is", async () => {
    const top = await open(sessionItem(agent.files.chain).node);
    assert.deepEqual(
      top.map((i) => i.label),
      ["Model view", "Summaries", "Compressed chains", "Protected calls", "Pi compactions"],
    );
    const chains = await open(find(top, "Compressed chains").node);
    assert.deepEqual(
      chains.map((c) => [c.label, c.description]),
      [["b1", "t1, t2, t3 · 1 protected output kept"]],
    );
    assert.equal(chains[0]!.item.command?.command, "piPruner.reviewChain");
    const chainCalls = await open(chains[0]!.node);
    assert.deepEqual(
      chainCalls.map((c) => [c.label, c.description.split(" · ").slice(0, 2).join(" · ")]),
      [
        ["read src/parser.ts", "t1 · compressed"],
        ["read src/lexer.ts", "t2 · compressed"],
        ["bash npm test 2>&1 | tail -n 400", "t3 · compressed"],
      ],
    );
    const compactions = await open(find(top, "Pi compactions").node);
    assert.equal(compactions.length, 1);
    assert.equal(compactions[0]!.label, "Compaction");
    assert.match(compactions[0]!.description, /^24,000 tokens before · The user asked for a parser refactor/);
  });

  it("a branched session shows the latest branch and switches to another on request", async () => {
    const file = agent.files.branched;
    let top = await open(sessionItem(file).node);
    const branch = find(top, "approach B");
    assert.equal(branch.description, "branch 2 of 2 · latest");
    assert.equal(sessionItem(file).item.contextValue, "session branched");
    const latestLeaf = api.store.get(file)!.view!.leafId;
    assert.equal(api.store.get(file)!.view!.session.firstPrompt, "try two approaches");

    const prompter = new ScriptedPrompter((items) => items.find((i) => i.label === "approach A"));
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.chooseBranch", file);
    assert.deepEqual(prompter.picks[0]!.offered, ["approach B", "approach A"]);
    const view = api.store.get(file)!.view!;
    assert.notEqual(view.leafId, latestLeaf);
    assert.deepEqual(
      view.calls.map((c) => c.command ?? c.path),
      ["src/parser.ts", "echo approach A"],
    );
    top = await open(sessionItem(file).node);
    assert.equal(find(top, "approach A").description, "branch 1 of 2");

    api.setPrompter(new ScriptedPrompter((items) => items.find((i) => i.label === "approach B")));
    await vscode.commands.executeCommand("piPruner.chooseBranch", file);
    assert.equal(api.store.get(file)!.view!.leafId, latestLeaf);
    assert.equal(api.store.get(file)!.pinnedLeaf, undefined, "the latest branch is followed again, not pinned");
  });

  it("each session's Model view row counts the requests its shown branch sent, on every branch, as core lists them", async () => {
    const counts: number[] = [];
    const check = async (file: string) => {
      const top = await open(sessionItem(file).node);
      const state = api.store.get(file)!;
      const sent = modelRequests(getBranch(state.data!, state.view!.leafId).entries).length;
      counts.push(sent);
      assert.equal(find(top, "Model view").description, sent > 0 ? `last request sent · ${sent} of ${sent}` : "next request · none sent yet", file);
    };
    for (const session of sessions) await check(session.node.path);
    const file = agent.files.branched;
    try {
      for (const leaf of api.store.leavesOf(file)) {
        await api.store.setLeaf(file, leaf);
        await check(file);
      }
    } finally {
      await api.store.setLeaf(file, undefined);
    }
    assert.ok(counts.some((n) => n > 0), `some branch sent requests: ${counts.join(", ")}`);
  });

  it("a session with bad lines shows what it could read and a warning item listing the bad line numbers", async () => {
    const bad = sessionItem(agent.files.bad);
    assert.match(bad.description, / · 3 bad lines$/);
    assert.equal((bad.item.iconPath as vscode.ThemeIcon).id, "warning");
    const top = await open(bad.node);
    assert.equal(top[0]!.label, "3 unreadable lines: 4, 7, 8");
    assert.match(tooltipText(top[0]!.item), /line 4: not valid JSON/);
    assert.match(tooltipText(top[0]!.item), /line 8: last line is cut off/);
    const view = api.store.get(agent.files.bad)!.view!;
    assert.deepEqual(
      view.calls.map((c) => c.path),
      ["README.md"],
    );
  });

  it("shows every session under the agent dir when piPruner.showAllSessions is on", async () => {
    const otherCwd = tempDir("pi-pruner-other-");
    const otherDir = path.join(agent.agentDir, "sessions", `--${otherCwd.replace(/^\//, "").replace(/[/\\:]/g, "-")}--`);
    fs.mkdirSync(otherDir, { recursive: true });
    const other = path.join(otherDir, "2025-02-01T00-00-00-000Z_other.jsonl");
    fs.writeFileSync(other, `${JSON.stringify({ type: "session", version: 3, id: "other", cwd: otherCwd, timestamp: new Date().toISOString() })}\n`);
    try {
      await useAgentDir(api, agent.agentDir, { all: true });
      const all = await open();
      assert.ok(all.some((s) => s.node.path === other), "the other folder's session is listed");
      assert.equal(all.length, sessions.length + 1);
    } finally {
      await useAgentDir(api, agent.agentDir);
    }
    assert.equal((await open()).length, sessions.length);
  });

  it("says so when there are no sessions yet, or no agent dir", async () => {
    const empty = tempDir("pi-pruner-empty-agent-");
    await useAgentDir(api, empty);
    assert.equal(api.store.state, "noSessions");
    assert.deepEqual(await open(), []);
    const missing = path.join(empty, "does-not-exist");
    await useAgentDir(api, missing);
    assert.equal(api.store.state, "noAgentDir");
    await useAgentDir(api, agent.agentDir);
    assert.equal(api.store.state, "ready");
    assert.ok(workspaceDir());
  });
});
