// The read-only documents a click opens: a pruned call with its full original output (spilled
// output from its sidecar, and only from inside the session's blobs folder), a summary's markdown,
// the model view of a session, and the review of a compressed chain as a diff.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { loadConfig } from "../../../core/src/settings/settings-reader.ts";
import { messagesAsText } from "../../../core/src/view/model-view.ts";
import { buildRequestView } from "../../../core/src/view/request-views.ts";
import { readSessionFile } from "../../../core/src/session/session-reader.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { TEST_LOG } from "../fixtures/sessions.ts";
import { children, closeAllEditors, extensionApi, find, freshAgent, workspaceDir, type SuiteAgent } from "./helpers.ts";

describe("documents", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api, { withPiSession: true });
  });
  afterEach(closeAllEditors);

  /** Clicks the item: runs its command, returns the editor's text. */
  async function click(item: vscode.TreeItem): Promise<vscode.TextDocument> {
    assert.ok(item.command, `item ${String(item.label)} has no command`);
    await vscode.commands.executeCommand(item.command.command, ...(item.command.arguments ?? []));
    const editor = await waitForEditor();
    return editor.document;
  }

  async function waitForEditor(): Promise<vscode.TextEditor> {
    for (let i = 0; i < 200; i++) {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.uri.scheme === "pi-pruner") return editor;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error("no pi-pruner document became active");
  }

  async function groupItems(file: string, group: string): Promise<vscode.TreeItem[]> {
    const session = api.sessionsTree.sessionNode(file);
    const top = await children(api.sessionsTree, session);
    const items = await children(api.sessionsTree, find(top, group).node);
    return items.map((i) => i.item);
  }

  async function callUnderSummary(file: string, index: number): Promise<vscode.TreeItem> {
    const session = api.sessionsTree.sessionNode(file);
    const summaries = await children(api.sessionsTree, find(await children(api.sessionsTree, session), "Summaries").node);
    const calls = await children<SessionNode>(api.sessionsTree, summaries[0]!.node);
    return calls[index]!.item;
  }

  it("a pruned call opens read-only with its tool, arguments, status and full original output", async () => {
    const doc = await click(await callUnderSummary(agent.files.pi, 0));
    const text = doc.getText();
    assert.match(text, /^# read · t1 · summarized/);
    assert.match(text, /^Tool: {9}read$/m);
    assert.match(text, /^Status: {7}ok$/m);
    assert.match(text, /"path": "src\/parser\.ts"/);
    // the whole output the tool returned, not the stub the model sees
    assert.match(text, /parser line 1: const value0 = compute\(0\);/);
    assert.match(text, /parser line 60: const value59 = compute\(59\);/);
    assert.doesNotMatch(text, /pruned: see ref/);
    await assert.rejects(Promise.resolve(vscode.workspace.fs.writeFile(doc.uri, Buffer.from("x"))), "the document cannot be written");
  });

  it("a spilled call shows its output from the sidecar in the session's blobs folder", async () => {
    const [spilled] = await groupItems(agent.files.pi, "Pruned without a summary");
    const text = (await click(spilled!)).getText();
    assert.match(text, /^State: {8}spilled to disk \(70,000 bytes\), ref t3$/m);
    assert.match(text, /Output \(70,000 characters, from the spill file .*-blobs\/call_\d+_\d+-\d+\.txt\):/);
  });

  it("a spill path outside the session's blobs folder is refused, and the session's own copy is shown", async () => {
    const [spilled] = await groupItems(agent.files.pruned, "Pruned without a summary");
    const text = (await click(spilled!)).getText();
    assert.match(text, /Spill file not read: .*\/blobs\/c3\.txt is outside this session's blobs folder .*; refused\./);
    assert.match(text, /Output \(80,000 characters, as stored in the session file instead\):/);
  });

  it("a spill path that is a symbolic link out of the blobs folder is refused", async () => {
    const blobs = path.join(agent.sessionDir, "s-chain-blobs");
    const secret = path.join(workspaceDir(), "docs", "guide.md");
    const state = await api.store.load(agent.files.chain);
    const call = state!.view!.calls.find((c) => c.spillPath)!;
    fs.rmSync(call.spillPath!);
    fs.symlinkSync(secret, call.spillPath!);
    try {
      const top = await children(api.sessionsTree, api.sessionsTree.sessionNode(agent.files.chain));
      const chains = await children<SessionNode>(api.sessionsTree, find(top, "Compressed chains").node);
      const calls = await children<SessionNode>(api.sessionsTree, chains[0]!.node);
      const text = (await click(find(calls, /^bash/).item)).getText();
      assert.match(text, /is outside this session's blobs folder/);
      assert.doesNotMatch(text, /How the parser works/);
      assert.ok(fs.existsSync(blobs));
    } finally {
      fs.rmSync(call.spillPath!);
      fs.writeFileSync(call.spillPath!, TEST_LOG);
    }
  });

  it("a summary opens as its markdown source, in plain text (the markdown extension would make its links live)", async () => {
    const session = api.sessionsTree.sessionNode(agent.files.pruned);
    const summaries = await children(api.sessionsTree, find(await children(api.sessionsTree, session), "Summaries").node);
    const doc = await click(summaries[0]!.item);
    assert.equal(doc.languageId, "plaintext");
    assert.equal(doc.getText(), "- `t2` read src/a.ts: all A's\n");
  });

  it("Show Model View opens the last request sent, exactly as the model was sent it, with characters raw vs. sent", async () => {
    await vscode.commands.executeCommand("piPruner.showModelView", agent.files.pi);
    const text = (await waitForEditor()).document.getText();
    const data = await readSessionFile(agent.files.pi);
    const config = loadConfig({ agentDir: agent.agentDir, cwd: workspaceDir(), projectTrusted: true }).config;
    const model = buildRequestView(data, { config, request: "last" })!;
    const n = (x: number) => x.toLocaleString("en-US");
    assert.match(text, new RegExp(`^# Model view: last request sent, request ${model.requestCount} of ${model.requestCount}, as it was sent$`, "m"));
    assert.match(text, new RegExp(`^# Characters raw ${n(model.rawChars)} → sent ${n(model.modelChars)} \\(-\\d+%\\)`, "m"));
    assert.ok(text.endsWith(messagesAsText(model.messages)), "the body is the core render of the messages");
    assert.match(text, /pruned: see ref `t1`/);
    assert.match(text, /# Release skill/, "the protected skill file is sent verbatim");
  });

  it("a compressed chain opens a diff: the original span beside what the model is sent", async () => {
    const chains = await groupItems(agent.files.chain, "Compressed chains");
    const item = chains[0]!;
    await vscode.commands.executeCommand(item.command!.command, ...(item.command!.arguments ?? []));
    let tab: vscode.Tab | undefined;
    for (let i = 0; i < 200 && !tab; i++) {
      tab = vscode.window.tabGroups.activeTabGroup.activeTab;
      if (!(tab?.input instanceof vscode.TabInputTextDiff)) tab = undefined;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(tab, "a diff editor opened");
    const input = tab.input as vscode.TabInputTextDiff;
    assert.equal(tab.label, "Chain b1: original ↔ what the model is sent");
    const original = (await vscode.workspace.openTextDocument(input.original)).getText();
    const sent = (await vscode.workspace.openTextDocument(input.modified)).getText();
    assert.match(original, /^# Chain b1: the original span \(9 messages, [\d,]+ characters\)/);
    assert.match(original, /── 1\. user ──\nrefactor the parser/);
    assert.match(original, /PASS test\/parser\.test\.ts/);
    assert.match(original, /The parser is a stub; tests pass\.$/m);
    // The fixture's chain resolves and compression is on: the render replaced its middle by the block.
    assert.match(sent, /^# Chain b1: what the model is sent \(3 messages, [\d,]+ characters\)/);
    assert.match(sent, /── 1\. user ──\nrefactor the parser/);
    assert.match(sent, /── 2\. custom \(sent as user\) · context-prune-chain ──\n<compressed-chain id="b1" tools="t1,t2,t3">\nRead parser and lexer \(stubs\), ran the tests \(all pass\)\./);
    assert.match(sent, /<protected-output tool="read"># Release skill/, "the protected read is relocated into the block");
    assert.match(sent, /── 3\. assistant ──\nThe parser is a stub; tests pass\.$/m);
    assert.doesNotMatch(sent, /PASS test\/parser\.test\.ts|now write the new parser/, "dropped output and later turns are not in the sent span");
  });

  it("a compaction opens as its summary", async () => {
    const [compaction] = await groupItems(agent.files.chain, "Pi compactions");
    const text = (await click(compaction!)).getText();
    assert.match(text, /^# Pi compaction e\d+ \(24,000 tokens before, as Pi counted\)/);
    assert.match(text, /The user asked for a parser refactor/);
  });

  it("the unreadable lines of a session open as a list", async () => {
    const session = api.sessionsTree.sessionNode(agent.files.bad);
    const top = await children(api.sessionsTree, session);
    const text = (await click(top[0]!.item)).getText();
    assert.match(text, /^line 4: not valid JSON/m);
    assert.match(text, /^line 7: message entry without a string "id"$/m);
  });
});
