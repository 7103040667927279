// What a request cost, in the editor: the model view's header carries the same cost line as
// `pi-pruner view --request N` (read / written / uncached, and what made a request rewrite the
// cache), and Compare with Previous Request opens a diff of two requests' model views at the
// first line that changed.
import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as vscode from "vscode";
import { main as cli } from "../../../core/src/cli/cli.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { parseDocumentUri } from "../../../vscode-extension/src/documents/document-uri.ts";
import { costSession } from "../fixtures/cost-session.ts";
import { largeSession, recordedSession, writeSession } from "../fixtures/sessions.ts";
import { closeAllEditors, extensionApi, ScriptedPrompter, sessionDirName, tempDir, useAgentDir, waitFor, workspaceDir } from "./helpers.ts";

const COMPARE = "piPruner.compareWithPreviousRequest";

describe("request cost and compare", () => {
  let api: PiPrunerApi;
  let agentDir: string;
  const files: Record<string, string> = {};

  before(async () => {
    api = await extensionApi();
    agentDir = tempDir("pi-pruner-cost-");
    const sessionDir = path.join(agentDir, "sessions", sessionDirName(workspaceDir()));
    files.cost = writeSession(sessionDir, await costSession(workspaceDir()), new Date(Date.UTC(2025, 0, 20, 10)));
    files.recorded = writeSession(sessionDir, recordedSession(workspaceDir()), new Date(Date.UTC(2025, 0, 13, 10)));
    files.long = writeSession(sessionDir, largeSession(workspaceDir(), 4_500_000), new Date(Date.UTC(2025, 0, 6, 10)));
    await useAgentDir(api, agentDir);
  });

  afterEach(async () => {
    api.setPrompter(undefined);
    await closeAllEditors();
  });

  /** Opens request `n`'s model view of `file` and waits for its text. */
  async function openRequest(file: string, n: number, timeoutMs?: number): Promise<vscode.TextEditor> {
    await vscode.commands.executeCommand("piPruner.openDocument", { kind: "model", file, request: n }, `request ${n}`);
    return waitFor(() => {
      const editor = vscode.window.activeTextEditor;
      const shown = editor && parseDocumentUri(editor.document.uri);
      return shown?.kind === "model" && shown.request === n && /^# Model view: /.test(editor!.document.getText()) ? editor : undefined;
    }, `the model view of request ${n}`, timeoutMs);
  }

  /** The cost line of `pi-pruner view FILE --request N`'s header, as the command line prints it. */
  async function cliCostLine(file: string, n: number): Promise<string> {
    let out = "";
    let err = "";
    const code = await cli(["view", file, "--request", String(n)], { out: (t) => (out += t), err: (t) => (err += t), env: { PI_CODING_AGENT_DIR: agentDir }, cwd: workspaceDir() });
    assert.equal(code, 0, err);
    const line = out.split("\n").find((l) => l.startsWith("# cost: "));
    assert.ok(line, `no cost line in:\n${out.slice(0, 2000)}`);
    return line;
  }

  const headerCostLine = (editor: vscode.TextEditor) => editor.document.getText().split("\n").find((l) => l.startsWith("# cost: "));

  it("a request's model view names what it cost in the command line's words, and why a request rewrote the cache", async () => {
    for (const n of [1, 2, 3, 4]) {
      const editor = await openRequest(files.cost!, n);
      assert.equal(headerCostLine(editor), await cliCostLine(files.cost!, n), `request ${n}`);
    }
    // After the flush that stubbed t1 the provider wrote 1,500 tokens again: the view names the flush and where the prompt changed.
    const third = await openRequest(files.cost!, 3);
    assert.equal(headerCostLine(third), "# cost: read 200 · written 1,500 · uncached 10 tokens · rewrote 1,510 beyond the 0 added: a flush (summarized) stubbed t1 (first changed message: 3)");
    assert.equal(headerCostLine(await openRequest(files.cost!, 4)), "# cost: read 1,710 · written 300 · uncached 10 tokens");
  });

  it("a request whose answer carried no usage shows the meter's estimate, marked as one", async () => {
    const editor = await openRequest(files.recorded!, 2);
    const line = headerCostLine(editor);
    assert.match(line ?? "", /^# cost: read [0-9,]+ · written [0-9,]+ · uncached [0-9,]+ tokens \(estimate\)$/);
    assert.equal(line, await cliCostLine(files.recorded!, 2));
  });

  it("a branch of more than a thousand requests has each request's cost worked out up to it, the command line's words", async () => {
    const second = await openRequest(files.long!, 2, 60_000);
    const count = Number(/^# Model view: request 2 of (\d+),/.exec(second.document.getText())?.[1]);
    assert.ok(count > 1_000, `the long session sent ${count} requests`);
    assert.equal(headerCostLine(second), await cliCostLine(files.long!, 2));
    const last = await openRequest(files.long!, count, 180_000);
    assert.equal(headerCostLine(last), await cliCostLine(files.long!, count));
    // Back to an earlier request: what was worked out is kept.
    assert.equal(headerCostLine(await openRequest(files.long!, 700, 60_000)), await cliCostLine(files.long!, 700));
  });

  it("Compare with Previous Request opens a diff of request N−1 beside N, at the first line that changed", async () => {
    await openRequest(files.cost!, 3);
    await vscode.commands.executeCommand(COMPARE);
    const tab = await waitFor(() => {
      const active = vscode.window.tabGroups.activeTabGroup.activeTab;
      return active?.input instanceof vscode.TabInputTextDiff ? active : undefined;
    }, "a diff editor");
    const input = tab.input as vscode.TabInputTextDiff;
    assert.deepEqual(parseDocumentUri(input.original), { kind: "model", file: files.cost, request: 2 });
    assert.deepEqual(parseDocumentUri(input.modified), { kind: "model", file: files.cost, request: 3 });
    assert.match(tab.label, /^Request 2 ↔ 3 — /);

    // The right side is active, its cursor on the stub that replaced the read's output (message 3), in view.
    const editor = await waitFor(() => {
      const e = vscode.window.activeTextEditor;
      return e?.document.uri.toString() === input.modified.toString() && e.selection.active.line > 0 ? e : undefined;
    }, "the right side of the diff active, its cursor moved");
    const line = editor.selection.active.line;
    const right = editor.document.getText().split("\n");
    assert.match(right[line]!, /^\[read output pruned: see ref `t1` in the summary/);
    assert.ok(editor.visibleRanges.some((r) => r.start.line <= line && line <= r.end.line), `line ${line + 1} is not in view`);
    // Every message line above it reads the same on the left; the left's next line is the read's output.
    const left = (await vscode.workspace.openTextDocument(input.original)).getText().split("\n");
    const rightBody = right.indexOf("");
    const leftBody = left.indexOf("");
    assert.deepEqual(left.slice(leftBody, leftBody + line - rightBody), right.slice(rightBody, line));
    assert.equal(left[leftBody + line - rightBody], "parser line 1: export const rule0 = compile(\"rule 0\");");
    assert.match(right[line - 1]!, /^── 3\. tool result · read · p1 ──$/);
  });

  it("on the last request sent, the two sides are numbered: the one before it and itself", async () => {
    await vscode.commands.executeCommand("piPruner.showModelView", files.cost);
    await waitFor(() => (vscode.window.activeTextEditor?.document.getText().startsWith("# Model view: last request sent, request 4 of 4") ? true : undefined), "the last request's view");
    await vscode.commands.executeCommand(COMPARE);
    const input = await waitFor(() => {
      const active = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
      return active instanceof vscode.TabInputTextDiff ? active : undefined;
    }, "a diff editor");
    assert.deepEqual([parseDocumentUri(input.original), parseDocumentUri(input.modified)], [
      { kind: "model", file: files.cost, request: 3 },
      { kind: "model", file: files.cost, request: 4 },
    ]);
  });

  it("on request 1 it says there is none before it and opens nothing", async () => {
    const prompter = new ScriptedPrompter();
    api.setPrompter(prompter);
    const first = await openRequest(files.cost!, 1);
    await vscode.commands.executeCommand(COMPARE);
    assert.deepEqual(prompter.messages, [{ level: "info", text: "Pi Pruner: request 1 is the first this branch sent; there is no request before it to compare with." }]);
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
    assert.equal(tabs.filter((t) => t.input instanceof vscode.TabInputTextDiff).length, 0, "no diff editor opened");
    assert.equal(vscode.window.activeTextEditor?.document.uri.toString(), first.document.uri.toString());
  });
});
