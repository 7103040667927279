// Export a session to markdown: its model view or its summaries with their calls, to the file the
// person chooses, with the session's text fenced so that none of it acts when rendered.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { closeAllEditors, extensionApi, freshAgent, ScriptedPrompter, tempDir, type SuiteAgent } from "./helpers.ts";

const COMMAND = "piPruner.exportSession";

/** The lines outside fenced blocks, checked independently of core's fence choice. */
function outsideFences(markdown: string): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const run = /^(`{3,})\s*$/.exec(line)?.[1] ?? /^(`{3,})/.exec(line)?.[1];
    if (fence === undefined) {
      if (run) fence = run;
      else out.push(line);
    } else if (/^`{3,}\s*$/.test(line) && line.trim().length >= fence.length) fence = undefined;
  }
  assert.equal(fence, undefined, "every fence is closed");
  return out;
}

describe("export to markdown", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  let dir: string;

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api);
    dir = tempDir("pi-pruner-export-");
  });
  afterEach(async () => {
    api.setPrompter(undefined);
    api.setSaveTarget(undefined);
    await closeAllEditors();
  });

  /** Runs the export for the chain session, choosing `what` and saving to `name`; returns the file's text. */
  async function exportChain(what: string, name: string): Promise<{ text: string; prompter: ScriptedPrompter; suggested?: vscode.Uri }> {
    const prompter = new ScriptedPrompter(what);
    let suggested: vscode.Uri | undefined;
    api.setPrompter(prompter);
    api.setSaveTarget(async (defaultUri) => {
      suggested = defaultUri;
      return vscode.Uri.file(path.join(dir, name));
    });
    await vscode.commands.executeCommand(COMMAND, api.sessionsTree.sessionNode(agent.files.chain));
    return { text: fs.readFileSync(path.join(dir, name), "utf8"), prompter, suggested };
  }

  it("is on a session's context menu", () => {
    const manifest = vscode.extensions.getExtension("pi-pruner.pi-pruner-vscode")!.packageJSON as { contributes: { menus: Record<string, { command: string; when?: string }[]> } };
    assert.ok(manifest.contributes.menus["view/item/context"]!.some((m) => m.command === COMMAND && /viewItem =~ \/\^session\//.test(m.when ?? "")));
  });

  it("summaries with their calls: each summary's text and its calls, the hostile text inert", async () => {
    const { text, prompter, suggested } = await exportChain("Summaries with their calls", "summaries.md");
    assert.deepEqual(prompter.picks[0]!.offered, ["Model view", "Summaries with their calls"]);
    assert.match(suggested?.path ?? "", /Parser refactor summaries\.md$/);
    assert.match(text, /^## Summary 1 of \d+$/m);
    assert.match(text, /read src\/parser\.ts: `parse\(\)` is a stub/);
    assert.match(text, /^Tool-call id: r1$/m);
    assert.match(text, /"path": "src\/parser\.ts"/);
    // The summary holds a command link and an <img onerror>: both only inside fences.
    assert.ok(text.includes("command:workbench.action.terminal.new"));
    const outside = outsideFences(text).join("\n");
    assert.doesNotMatch(outside, /command:|<img|\]\(|parse\(\)/);
    assert.deepEqual(prompter.messages, [{ level: "info", text: `Pi Pruner: exported to ${path.join(dir, "summaries.md")}.` }]);
  });

  it("the model view: the last request sent, every message fenced", async () => {
    const { text } = await exportChain("Model view", "model.md");
    assert.match(text, /^# Pi Pruner model view$/m);
    assert.match(text, /Shown: request \d+ of \d+, as it was sent/);
    // The last request carried the write's result; the reply it got is not part of it.
    assert.match(text, /^Wrote src\/parser\.ts$/m);
    assert.match(text, /^<compressed-chain id="b1"/m);
    assert.doesNotMatch(text, /Done: the new parser splits on spaces\./);
    const outside = outsideFences(text).join("\n");
    assert.doesNotMatch(outside, /parser|command:|</);
  });

  it("from a model view tab: the request that tab shows", async () => {
    const editor = (await vscode.commands.executeCommand("piPruner.openDocument", { kind: "model", file: agent.files.chain, request: 1 }, "model view")) as vscode.TextEditor;
    const prompter = new ScriptedPrompter("Model view");
    api.setPrompter(prompter);
    api.setSaveTarget(async () => vscode.Uri.file(path.join(dir, "request-1.md")));
    await vscode.commands.executeCommand(COMMAND, editor.document.uri);
    const text = fs.readFileSync(path.join(dir, "request-1.md"), "utf8");
    assert.match(text, /^Shown: request 1 of \d+, as it was sent$/m);
    assert.match(text, /^refactor the parser$/m);
    assert.doesNotMatch(text, /Wrote src\/parser\.ts/, "request 1 came before the write");
  });

  it("a dismissed save dialog writes nothing", async () => {
    const prompter = new ScriptedPrompter("Model view");
    api.setPrompter(prompter);
    api.setSaveTarget(async () => undefined);
    const before = fs.readdirSync(dir).length;
    await vscode.commands.executeCommand(COMMAND, agent.files.chain);
    assert.equal(fs.readdirSync(dir).length, before);
    assert.deepEqual(prompter.messages, []);
  });
});
