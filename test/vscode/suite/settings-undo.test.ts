// Settings edits a person can take back: "Remove from protectedPaths" offers Undo in its
// notification, and Undo gives the settings file its exact text back unless the file changed
// since; a pattern copied into a settings file from the default (or global) list says so.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { ProtectedNode } from "../../../vscode-extension/src/trees/protected-tree.ts";
import { PROTECTED_BADGE } from "../../../vscode-extension/src/decorations.ts";
import {
  children,
  extensionApi,
  find,
  freshAgent,
  protectedViewShows,
  ScriptedPrompter,
  tooltipText,
  waitFor,
  workspaceDir,
  writeSettingsText,
  type SuiteAgent,
} from "./helpers.ts";

describe("settings edits a person can undo", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  const ws = () => workspaceDir();
  const projectFile = () => path.join(ws(), ".pi", "settings.json");
  const globalFile = () => path.join(agent.agentDir, "settings.json");
  const fileUri = (rel: string) => vscode.Uri.file(path.join(ws(), rel));
  const readText = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined);
  const writeText = writeSettingsText;
  const viewShows = (expected: string[][]) => protectedViewShows(api, expected);

  async function patternNode(pattern: string): Promise<ProtectedNode> {
    return find(await children(api.protectedTree), pattern).node;
  }

  /** Runs "Remove from protectedPaths" on the view's row of `pattern`, answering its questions with `answers`. */
  async function removeFromView(pattern: string, ...answers: string[]): Promise<ScriptedPrompter> {
    const prompter = new ScriptedPrompter(...answers);
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.removeFromProtectedPaths", await patternNode(pattern));
    return prompter;
  }

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api);
  });

  afterEach(async () => {
    api.setPrompter(undefined);
    fs.rmSync(path.join(ws(), ".pi"), { recursive: true, force: true });
    fs.rmSync(globalFile(), { force: true });
    api.settings.invalidate();
    await viewShows([["**/skills/**/*.md", "default"]]);
  });

  // Pi reads settings.json as plain JSON; the person's own layout (4 spaces, a one-line list, key order) is what must come back.
  const original = '{\n    "theme": "dark",\n    "contextPrune": { "protectedPaths": ["src/**", "docs/**", "**/SKILL.md"], "minBatchChars": 500 },\n    "zeta": [1, 2]\n}\n';
  const originalRows = [
    ["src/**", "project"],
    ["docs/**", "project"],
    ["**/SKILL.md", "project"],
  ];

  async function startFromOriginal() {
    writeText(projectFile(), original);
    await viewShows(originalRows);
  }

  it("Remove offers Undo in its notification, and Undo gives the file its exact text back", async () => {
    await startFromOriginal();
    const prompter = await removeFromView("src/**");
    assert.deepEqual(
      prompter.offers.map((o) => [o.text, o.action]),
      [[`Pi Pruner: removed src/** from protectedPaths in ${projectFile()}.`, "Undo"]],
    );
    await viewShows([
      ["docs/**", "project"],
      ["**/SKILL.md", "project"],
    ]);
    assert.deepEqual(JSON.parse(readText(projectFile())!).contextPrune.protectedPaths, ["docs/**", "**/SKILL.md"]);
    assert.equal(api.decorations.provideFileDecoration(fileUri("src/parser.ts")), undefined);

    prompter.offers[0]!.choose(true);
    await waitFor(() => readText(projectFile()) === original, `the project file to get its text back (it holds ${JSON.stringify(readText(projectFile()))})`);
    await viewShows(originalRows);
    assert.deepEqual(prompter.messages.slice(1), [{ level: "info", text: `Pi Pruner: undone: ${projectFile()} is as it was before src/** was removed.` }]);
    const decoration = await waitFor(() => api.decorations.provideFileDecoration(fileUri("src/parser.ts")) as vscode.FileDecoration | undefined, "src/parser.ts to be protected again");
    assert.equal(decoration.badge, PROTECTED_BADGE);
    assert.deepEqual(fs.readdirSync(path.dirname(projectFile())), ["settings.json"], "no lock or temp file left behind");
  });

  it("a dismissed notification leaves the removal in place", async () => {
    await startFromOriginal();
    const prompter = await removeFromView("docs/**");
    const removed = readText(projectFile());
    prompter.offers[0]!.choose(false);
    await viewShows([
      ["src/**", "project"],
      ["**/SKILL.md", "project"],
    ]);
    assert.equal(readText(projectFile()), removed);
    assert.equal(prompter.messages.length, 1);
  });

  it("Undo after the file changed meanwhile says so and leaves the file as it is", async () => {
    await startFromOriginal();
    const prompter = await removeFromView("src/**");
    await viewShows([
      ["docs/**", "project"],
      ["**/SKILL.md", "project"],
    ]);
    // Someone edits the file before Undo is chosen.
    const edited = '{\n    "theme": "light",\n    "contextPrune": { "protectedPaths": ["docs/**", "**/SKILL.md", "notes/**"] }\n}\n';
    writeText(projectFile(), edited);
    await viewShows([
      ["docs/**", "project"],
      ["**/SKILL.md", "project"],
      ["notes/**", "project"],
    ]);

    prompter.offers[0]!.choose(true);
    const refusal = await waitFor(() => prompter.messages[1], "Undo to answer");
    assert.deepEqual(refusal, {
      level: "warn",
      text: `Pi Pruner: did not undo the removal of src/**: ${projectFile()} has changed since that edit, so it cannot be taken back without losing the newer change; it was left as it is.`,
    });
    assert.equal(readText(projectFile()), edited);
    await viewShows([
      ["docs/**", "project"],
      ["**/SKILL.md", "project"],
      ["notes/**", "project"],
    ]);
  });

  it("removing a default writes the list without it into the chosen file; Undo removes the file it created", async () => {
    assert.equal(readText(projectFile()), undefined);
    const prompter = await removeFromView("**/skills/**/*.md", "Project settings");
    assert.equal(prompter.picks[0]!.title, "**/skills/**/*.md is a default; write the list without it to…");
    assert.deepEqual(JSON.parse(readText(projectFile())!), { contextPrune: { protectedPaths: [] } });
    assert.equal(prompter.offers[0]!.text, `Pi Pruner: removed **/skills/**/*.md from protectedPaths in ${projectFile()} (the list is now empty: path protection is off).`);
    await viewShows([["protectedPaths is empty: path protection is off", ""]]);

    prompter.offers[0]!.choose(true);
    await waitFor(() => !fs.existsSync(projectFile()), "the project file the removal created to be gone");
    await viewShows([["**/skills/**/*.md", "default"]]);
    assert.equal((api.decorations.provideFileDecoration(fileUri("skills/release/SKILL.md")) as vscode.FileDecoration).badge, PROTECTED_BADGE);
  });

  it("a file that does not parse is refused, left as it was, and no Undo is offered", async () => {
    const broken = '{\n  "theme": "dark",\n  "contextPrune": { "protectedPaths": ["src/**", }\n';
    writeText(projectFile(), broken);
    await waitFor(async () => /settings\.json: not valid JSON/.test((await children(api.protectedTree))[0]!.label), "the view to report the broken file");
    const prompter = await removeFromView("**/skills/**/*.md", "Project settings");
    assert.equal(prompter.offers.length, 0);
    assert.equal(prompter.messages.length, 1);
    assert.equal(prompter.messages[0]!.level, "error");
    assert.match(prompter.messages[0]!.text, /is not valid JSON .*; fix it by hand, it was left unchanged/);
    assert.equal(readText(projectFile()), broken);
  });

  it("the first project pattern copies the default into the project file, and the view says it was copied", async () => {
    const prompter = new ScriptedPrompter("src/parser.ts", "Project settings");
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.addToProtectedPaths", fileUri("src/parser.ts"));
    assert.deepEqual(JSON.parse(readText(projectFile())!).contextPrune.protectedPaths, ["**/skills/**/*.md", "src/parser.ts"]);
    await viewShows([
      ["**/skills/**/*.md", "project · copied from default"],
      ["src/parser.ts", "project"],
    ]);
    const copied = find(await children(api.protectedTree), "**/skills/**/*.md");
    const tooltip = tooltipText(copied.item);
    assert.ok(
      tooltip.includes(`From ${projectFile()}. Copied there from the default list when the editor wrote this file's first list, because a list in a settings file replaces the default.`),
      tooltip,
    );

    // Removed and taken back: the label comes back with it.
    const removal = await removeFromView("**/skills/**/*.md");
    await viewShows([["src/parser.ts", "project"]]);
    removal.offers[0]!.choose(true);
    await viewShows([
      ["**/skills/**/*.md", "project · copied from default"],
      ["src/parser.ts", "project"],
    ]);

    // A list the person writes again by hand after deleting the file is theirs, not a copy.
    fs.rmSync(projectFile());
    await viewShows([["**/skills/**/*.md", "default"]]);
    writeText(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: ["**/skills/**/*.md", "src/parser.ts"] } }));
    await viewShows([
      ["**/skills/**/*.md", "project"],
      ["src/parser.ts", "project"],
    ]);
  });

  it("when the global file has a list, the first project pattern copies it and the view says it came from global", async () => {
    writeText(globalFile(), JSON.stringify({ contextPrune: { protectedPaths: ["docs/**"] } }, null, 2));
    await viewShows([["docs/**", "global"]]);
    const prompter = new ScriptedPrompter("src/**", "Project settings");
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.addToProtectedPaths", fileUri("src/lexer.ts"));
    assert.deepEqual(prompter.messages, [
      {
        level: "info",
        text: `Pi Pruner: added src/** to protectedPaths in ${projectFile()}. The global pattern docs/** was copied there too: the project's own list replaces the global one.`,
      },
    ]);
    await viewShows([
      ["docs/**", "project · copied from global"],
      ["src/**", "project"],
    ]);
  });
});
