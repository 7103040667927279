// Explorer → "Pi Pruner: Sessions That Read This File": every call of the listed sessions that
// names the file, grouped by session with its state, each opening the call's document.
import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { closeAllEditors, extensionApi, freshAgent, ScriptedPrompter, waitFor, workspaceDir, type SuiteAgent } from "./helpers.ts";

const COMMAND = "piPruner.sessionsThatReadFile";

describe("sessions that read a file", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api);
  });
  afterEach(async () => {
    api.setPrompter(undefined);
    await closeAllEditors();
  });

  it("is offered on a file in the Explorer's context menu", () => {
    const manifest = vscode.extensions.getExtension("pi-pruner.pi-pruner-vscode")!.packageJSON as { contributes: { menus: Record<string, { command: string; when?: string }[]> } };
    const entry = manifest.contributes.menus["explorer/context"]!.find((m) => m.command === COMMAND);
    assert.ok(entry, "the Explorer's context menu holds the command");
    assert.match(entry.when ?? "", /!explorerResourceIsFolder/);
  });

  it("lists each session's calls naming the file with their states; choosing one opens that call", async () => {
    let offered: vscode.QuickPickItem[] = [];
    const prompter = new ScriptedPrompter((items) => {
      offered = items;
      return items.find((i) => i.label.startsWith("write") && i.kind !== vscode.QuickPickItemKind.Separator);
    });
    api.setPrompter(prompter);
    await vscode.commands.executeCommand(COMMAND, vscode.Uri.file(path.join(workspaceDir(), "src", "parser.ts")));

    const sessions = offered.filter((i) => i.kind === vscode.QuickPickItemKind.Separator).map((i) => i.label);
    const calls = offered.filter((i) => i.kind !== vscode.QuickPickItemKind.Separator).map((i) => `${i.label} | ${i.description ?? ""}`);
    assert.ok(sessions.some((s) => s.startsWith("Parser refactor")), `the chain session is a group: ${sessions.join(", ")}`);
    assert.ok(calls.some((c) => /^read t1: src\/parser\.ts \| compressed \(chain /.test(c)), `the compressed read is listed with its state: ${calls.join("; ")}`);
    assert.ok(calls.some((c) => /^write: src\/parser\.ts \| raw/.test(c)), `the write is listed as raw: ${calls.join("; ")}`);
    assert.ok(!calls.some((c) => /lexer/.test(c)), "no call of another file is listed");
    assert.match(prompter.picks[0]!.title ?? "", /^\d+ calls? in \d+ sessions? name src\/parser\.ts$/);

    const editor = await waitFor(() => (vscode.window.activeTextEditor?.document.uri.scheme === "pi-pruner" ? vscode.window.activeTextEditor : undefined), "the call's document to open");
    const text = editor.document.getText();
    assert.match(text, /^Tool: {9}write$/m);
    assert.match(text, /Wrote src\/parser\.ts/);
    assert.ok(text.includes(agent.files.chain), "the document names the chain session's file");
  });

  it("a file no session names says so and asks nothing", async () => {
    const prompter = new ScriptedPrompter();
    api.setPrompter(prompter);
    await vscode.commands.executeCommand(COMMAND, vscode.Uri.file(path.join(workspaceDir(), "docs", "guide.md")));
    assert.deepEqual(prompter.picks, []);
    assert.deepEqual(prompter.messages, [{ level: "info", text: "Pi Pruner: no listed session names docs/guide.md." }]);
  });
});
