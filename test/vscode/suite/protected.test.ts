// Protected files: the Protected Files view, the explorer's "Add to protectedPaths", the view's
// "Remove from protectedPaths", and the file decorations, against real settings files on disk.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { ProtectedNode } from "../../../vscode-extension/src/trees/protected-tree.ts";
import { PROTECTED_BADGE, PRUNED_BADGE } from "../../../vscode-extension/src/decorations.ts";
import {
  children,
  extensionApi,
  find,
  freshAgent,
  protectedViewShows,
  ScriptedPrompter,
  waitFor,
  workspaceDir,
  writeSettingsText,
  type SuiteAgent,
} from "./helpers.ts";

describe("protected files", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  const ws = () => workspaceDir();
  const projectFile = () => path.join(ws(), ".pi", "settings.json");
  const globalFile = () => path.join(agent.agentDir, "settings.json");
  const fileUri = (rel: string) => vscode.Uri.file(path.join(ws(), rel));
  const rows = async (node?: ProtectedNode) => (await children(api.protectedTree, node)).map((i) => [i.label, i.description]);

  const writeJson = writeSettingsText;
  const viewShows = (expected: string[][]) => protectedViewShows(api, expected);

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api, { withPiSession: true });
  });

  afterEach(async () => {
    api.setPrompter(undefined);
    fs.rmSync(path.join(ws(), ".pi"), { recursive: true, force: true });
    fs.rmSync(globalFile(), { force: true });
    api.settings.invalidate();
    await viewShows([["**/skills/**/*.md", "default"]]);
  });

  it("with no settings, lists the default pattern and the workspace files it protects", async () => {
    await viewShows([["**/skills/**/*.md", "default"]]);
    const [pattern] = await children(api.protectedTree);
    assert.deepEqual(await rows(pattern!.node), [["skills/release/SKILL.md", ""]]);
  });

  it("labels project and global patterns, shows the global ones a project list replaces, and the protected tools", async () => {
    writeJson(globalFile(), JSON.stringify({ contextPrune: { protectedPaths: ["docs/**"], protectedTools: ["web_fetch"] } }));
    await viewShows([
      ["docs/**", "global"],
      ["web_fetch", "protectedTools · global"],
    ]);
    writeJson(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: ["src/parser.ts", "**/SKILL.md"] } }));
    await viewShows([
      ["src/parser.ts", "project"],
      ["**/SKILL.md", "project"],
      ["docs/**", "global · replaced by the project's list"],
      ["web_fetch", "protectedTools · global"],
    ]);
    const top = await children(api.protectedTree);
    assert.deepEqual(await rows(find(top, "**/SKILL.md").node), [["skills/release/SKILL.md", ""]]);
    assert.deepEqual(await rows(find(top, "src/parser.ts").node), [["src/parser.ts", ""]]);
  });

  it("Add to protectedPaths offers the path, its folder glob and a **/name form, and writes the project file keeping its comments", async () => {
    const original = '{\n  // my editor settings\n  "theme": "dark", /* keep */\n  "contextPrune": { "minBatchChars": 500 }\n}\n';
    writeJson(projectFile(), original);
    await viewShows([["**/skills/**/*.md", "default"]]);
    const prompter = new ScriptedPrompter("src/**", "Project settings");
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.addToProtectedPaths", fileUri("src/lexer.ts"), [fileUri("src/lexer.ts")]);
    assert.deepEqual(prompter.picks[0]!.offered, ["src/lexer.ts", "src/**", "**/lexer.ts"]);
    assert.deepEqual(prompter.picks[1]!.offered, ["Project settings", "Global settings"]);
    assert.deepEqual(prompter.messages, [
      {
        level: "info",
        text: `Pi Pruner: added src/** to protectedPaths in ${projectFile()}. The default pattern **/skills/**/*.md was copied there too: a list in a settings file replaces the default.`,
      },
    ]);
    const text = fs.readFileSync(projectFile(), "utf8");
    assert.match(text, /\/\/ my editor settings/);
    assert.match(text, /"theme": "dark", \/\* keep \*\//);
    assert.match(text, /"minBatchChars": 500/);
    // the default is kept: the new list starts from the effective one
    assert.match(text, /"protectedPaths": \[\s*"\*\*\/skills\/\*\*\/\*\.md",\s*"src\/\*\*"\s*\]/);
    await viewShows([
      ["**/skills/**/*.md", "project · copied from default"],
      ["src/**", "project"],
    ]);
    const decoration = await waitFor(() => api.decorations.provideFileDecoration(fileUri("src/lexer.ts")) as vscode.FileDecoration | undefined, "src/lexer.ts to be decorated");
    assert.equal(decoration.badge, PROTECTED_BADGE);
    assert.equal(decoration.tooltip, "protected from pruning by `src/**`");
  });

  it("offers a folder glob and a **/name/** form for a folder, and writes the global file on request", async () => {
    const prompter = new ScriptedPrompter("**/docs/**", "Global settings");
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.addToProtectedPaths", fileUri("docs"));
    assert.deepEqual(prompter.picks[0]!.offered, ["docs/**", "**/docs/**"]);
    assert.deepEqual(JSON.parse(fs.readFileSync(globalFile(), "utf8")), { contextPrune: { protectedPaths: ["**/skills/**/*.md", "**/docs/**"] } });
    await viewShows([
      ["**/skills/**/*.md", "global · copied from default"],
      ["**/docs/**", "global"],
    ]);
    assert.equal((api.decorations.provideFileDecoration(fileUri("docs/guide.md")) as vscode.FileDecoration).tooltip, "protected from pruning by `**/docs/**`");
  });

  it("refuses to write a settings file it cannot parse, says why, and leaves it as it was", async () => {
    const broken = '{\n  "contextPrune": { "protectedPaths": ["a/**", }\n  oops\n';
    writeJson(projectFile(), broken);
    const prompter = new ScriptedPrompter("src/parser.ts", "Project settings");
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.addToProtectedPaths", fileUri("src/parser.ts"));
    assert.equal(prompter.messages.length, 1);
    assert.equal(prompter.messages[0]!.level, "error");
    assert.match(prompter.messages[0]!.text, /is not valid JSON .*; fix it by hand, it was left unchanged/);
    assert.equal(fs.readFileSync(projectFile(), "utf8"), broken);
    // The view reports the broken file instead of hiding it.
    await waitFor(async () => /settings\.json: not valid JSON/.test((await children(api.protectedTree))[0]!.label), "the view to report the broken file");
  });

  it("Remove from protectedPaths on a pattern removes it from the file it comes from", async () => {
    writeJson(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: ["src/**", "docs/**"] } }, null, 2));
    await viewShows([
      ["src/**", "project"],
      ["docs/**", "project"],
    ]);
    const prompter = new ScriptedPrompter();
    api.setPrompter(prompter);
    const node = find(await children(api.protectedTree), "src/**").node;
    assert.equal((await api.protectedTree.getTreeItem(node)).contextValue, "protectedPath.project");
    await vscode.commands.executeCommand("piPruner.removeFromProtectedPaths", node);
    assert.deepEqual(JSON.parse(fs.readFileSync(projectFile(), "utf8")).contextPrune.protectedPaths, ["docs/**"]);
    assert.match(prompter.messages[0]!.text, /removed src\/\*\* from protectedPaths/);
    await viewShows([["docs/**", "project"]]);
    assert.equal(api.decorations.provideFileDecoration(fileUri("src/parser.ts")), undefined);
  });

  it("decorations: protected files carry the badge and their pattern; files whose reads were pruned in the selected session a quieter mark", async () => {
    const skill = api.decorations.provideFileDecoration(fileUri("skills/release/SKILL.md")) as vscode.FileDecoration;
    assert.equal(skill.badge, PROTECTED_BADGE);
    assert.equal(skill.tooltip, "protected from pruning by `**/skills/**/*.md`");
    assert.equal(api.decorations.provideFileDecoration(fileUri("src/parser.ts")), undefined);

    const changed: string[] = [];
    const listening = api.decorations.onDidChangeFileDecorations((uris) => {
      for (const uri of Array.isArray(uris) ? uris : uris ? [uris] : []) changed.push(uri.fsPath);
    });
    try {
      await api.selectSession(agent.files.pi);
      const parser = api.decorations.provideFileDecoration(fileUri("src/parser.ts")) as vscode.FileDecoration;
      assert.equal(parser.badge, PRUNED_BADGE);
      assert.equal(parser.color, undefined, "the pruned mark has no colour of its own");
      assert.equal(parser.tooltip, "✂ pruned: Pi read this file in the selected session, and the model is sent less of it: t1 (summarized), t1 (deduped)");
      assert.equal((api.decorations.provideFileDecoration(fileUri("src/lexer.ts")) as vscode.FileDecoration).tooltip, "✂ pruned: Pi read this file in the selected session, and the model is sent less of it: t2 (summarized)");
      assert.ok(changed.includes(path.join(ws(), "src/parser.ts")), "the explorer was told to redraw src/parser.ts");
      // protection wins over the pruned mark (a protected read is never pruned)
      assert.equal((api.decorations.provideFileDecoration(fileUri("skills/release/SKILL.md")) as vscode.FileDecoration).badge, PROTECTED_BADGE);
    } finally {
      listening.dispose();
      await api.selectSession(undefined);
    }
    assert.equal(api.decorations.provideFileDecoration(fileUri("src/parser.ts")), undefined);
  });

  it("follows a project .pi folder deleted and made again, and one replaced by a link", async () => {
    writeJson(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: ["docs/**"] } }));
    await viewShows([["docs/**", "project"]]);
    // Deleted and made again between two looks: the OS watch on the old folder hears nothing more.
    fs.rmSync(path.join(ws(), ".pi"), { recursive: true, force: true });
    fs.mkdirSync(path.join(ws(), ".pi"));
    await viewShows([["**/skills/**/*.md", "default"]]);
    writeJson(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: ["src/lexer.ts"] } }));
    await viewShows([["src/lexer.ts", "project"]]);
    // Replaced by a link to another folder holding a settings file.
    const elsewhere = fs.mkdtempSync(path.join(path.dirname(agent.agentDir), "pi-folder-"));
    try {
      fs.writeFileSync(path.join(elsewhere, "settings.json"), JSON.stringify({ contextPrune: { protectedPaths: ["src/parser.ts"] } }));
      fs.rmSync(path.join(ws(), ".pi"), { recursive: true, force: true });
      fs.symlinkSync(elsewhere, path.join(ws(), ".pi"));
      await viewShows([["src/parser.ts", "project"]]);
      fs.writeFileSync(path.join(elsewhere, "settings.json"), JSON.stringify({ contextPrune: { protectedPaths: ["docs/guide.md"] } }));
      await viewShows([["docs/guide.md", "project"]]);
    } finally {
      fs.rmSync(path.join(ws(), ".pi"), { force: true });
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it("decorations follow a settings file changed on disk", async () => {
    let fired = 0;
    const listening = api.decorations.onDidChangeFileDecorations(() => fired++);
    try {
      writeJson(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: [] } }));
      await waitFor(() => api.decorations.provideFileDecoration(fileUri("skills/release/SKILL.md")) === undefined, "the skill file to lose its badge");
      assert.ok(fired > 0);
      await viewShows([["protectedPaths is empty: path protection is off", ""]]);
    } finally {
      listening.dispose();
    }
  });
});
