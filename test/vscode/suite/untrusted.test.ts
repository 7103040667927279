// A workspace's `.pi/settings.json` comes with the repository, so the editor treats it as
// untrusted input: a file nested 5,000 levels deep (jsonc-parser's recursive parse overflows the
// stack on it) leaves the Sessions view working and shows up in the Protected Files view as one
// warning naming it. In Restricted Mode the file is not read at all. The suite's host runs with
// workspace trust off (code-server --disable-workspace-trust: every workspace is trusted), so
// Restricted Mode is checked on the extension's own settings and Protected Files view built over a
// workspace trust the test controls, then granted.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { CopiedPatterns } from "../../../vscode-extension/src/settings/copied-patterns.ts";
import { PruneSettings, type WorkspaceTrust } from "../../../vscode-extension/src/settings/prune-settings.ts";
import { ProtectedTreeProvider } from "../../../vscode-extension/src/trees/protected-tree.ts";
import { ProtectedPathsEditor } from "../../../vscode-extension/src/settings/protected-paths-editor.ts";
import { WorkspaceFiles } from "../../../vscode-extension/src/watch/workspace-files.ts";
import { children, extensionApi, freshAgent, protectedViewShows, ScriptedPrompter, tooltipText, workspaceDir, writeSettingsText, type SuiteAgent } from "./helpers.ts";

const DEEP_SETTINGS = '{"a":'.repeat(5000) + "1" + "}".repeat(5000);

/** A Memento in memory (the copied-patterns record of a provider built by the test). */
class MemoryMemento implements vscode.Memento {
  private readonly values = new Map<string, unknown>();
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
  get<T>(key: string, defaultValue?: T): T | undefined {
    return this.values.has(key) ? (this.values.get(key) as T) : defaultValue;
  }
  update(key: string, value: unknown): Thenable<void> {
    this.values.set(key, value);
    return Promise.resolve();
  }
}

describe("a hostile or untrusted project settings file", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  const projectFile = () => path.join(workspaceDir(), ".pi", "settings.json");
  const deepWarning = () => `${projectFile()}: nested deeper than 64 levels; its contextPrune settings are ignored`;

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api, { withPiSession: true });
  });

  afterEach(async () => {
    fs.rmSync(path.join(workspaceDir(), ".pi"), { recursive: true, force: true });
    api.settings.invalidate();
    await protectedViewShows(api, [["**/skills/**/*.md", "default"]]);
  });

  it("nested 5,000 deep: the sessions are still listed and open, and Protected Files shows one warning naming the file", async () => {
    writeSettingsText(projectFile(), DEEP_SETTINGS);
    await vscode.commands.executeCommand("piPruner.refresh");
    await api.settled();
    const effective = api.settings.forCwd(workspaceDir());
    assert.deepEqual(
      effective.loaded.warnings.map((w) => w.message),
      [deepWarning()],
    );
    assert.equal(effective.projectTrusted, true, "the suite's host trusts every workspace");

    const rows = await children(api.protectedTree);
    assert.deepEqual(
      rows.map((r) => r.description),
      ["", "default"],
    );
    assert.equal(rows[0]!.item.contextValue, "note");
    assert.equal(tooltipText(rows[0]!.item), deepWarning());
    assert.equal(rows[1]!.label, "**/skills/**/*.md");

    const sessions = await children(api.sessionsTree);
    assert.deepEqual(
      sessions.map((s) => s.node.path).sort(),
      Object.values(agent.files).sort(),
    );
    // A session's model view renders with the settings that apply: the defaults, the file being refused.
    const pi = sessions.find((s) => s.node.path === agent.files.pi)!;
    const top = await children(api.sessionsTree, pi.node);
    assert.ok(top.some((i) => i.label === "Model view"), `the real-Pi session opens: ${top.map((i) => i.label).join(", ")}`);
    assert.equal(api.store.state, "ready");
  });

  it("Restricted Mode: the project's file is not read (no warning for a deep one, its block does not apply), the view says why; granting trust reads it", async () => {
    const granted = new vscode.EventEmitter<void>();
    const trust: { isTrusted: boolean } & WorkspaceTrust = { isTrusted: false, onDidGrantWorkspaceTrust: granted.event };
    const settings = new PruneSettings(api.settings.agentDir, trust);
    const files = new WorkspaceFiles();
    const copied = new CopiedPatterns(new MemoryMemento());
    const tree = new ProtectedTreeProvider(settings, files, copied);
    const untrustedNote = "Project settings not read: this workspace is not trusted";
    try {
      // A deep file: in Restricted Mode not even a warning, since it is never opened.
      writeSettingsText(projectFile(), DEEP_SETTINGS);
      let effective = settings.forCwd(workspaceDir());
      assert.equal(effective.projectTrusted, false);
      assert.deepEqual(effective.loaded.project, { path: projectFile(), exists: false, untrusted: true });
      assert.deepEqual(effective.loaded.warnings, []);
      let rows = await children(tree);
      assert.deepEqual(
        rows.map((r) => [r.label, r.description]),
        [
          [untrustedNote, ""],
          ["**/skills/**/*.md", "default"],
        ],
      );
      assert.equal(
        tooltipText(rows[0]!.item),
        `Restricted Mode: ${projectFile()} comes with the workspace and is not read, so only the global and default settings are shown. Trust the workspace to use the project's settings.`,
      );
      const defaultTooltip = tooltipText(rows[1]!.item);
      assert.ok(
        defaultTooltip.endsWith(`The default: the global settings file sets no protectedPaths, and ${projectFile()} is not read because the workspace is not trusted.`),
        defaultTooltip,
      );

      // A valid project block does not apply either.
      writeSettingsText(projectFile(), JSON.stringify({ contextPrune: { protectedPaths: ["src/**"], protectedTools: ["bash"] } }));
      settings.invalidate();
      effective = settings.forCwd(workspaceDir());
      assert.deepEqual(effective.loaded.config.protectedPaths, ["**/skills/**/*.md"]);
      assert.deepEqual(effective.loaded.config.protectedTools, []);
      assert.equal(effective.match("src/parser.ts"), undefined);

      // Trust granted: read again, with the project's block, and the note is gone.
      let refreshed = 0;
      const listening = settings.onDidChange(() => refreshed++);
      trust.isTrusted = true;
      granted.fire();
      listening.dispose();
      assert.equal(refreshed, 1, "granting trust drops what was read without the project's file");
      effective = settings.forCwd(workspaceDir());
      assert.equal(effective.projectTrusted, true);
      assert.deepEqual(effective.loaded.config.protectedPaths, ["src/**"]);
      rows = await children(tree);
      assert.deepEqual(
        rows.map((r) => [r.label, r.description]),
        [
          ["src/**", "project"],
          ["bash", "protectedTools · project"],
        ],
      );
    } finally {
      tree.dispose();
      copied.dispose();
      files.dispose();
      settings.dispose();
      granted.dispose();
    }
  });

  it("Restricted Mode: adding a pattern offers only the global settings, and a project pattern is not removed from the project's file", async () => {
    const granted = new vscode.EventEmitter<void>();
    const settings = new PruneSettings(api.settings.agentDir, { isTrusted: false, onDidGrantWorkspaceTrust: granted.event });
    const copied = new CopiedPatterns(new MemoryMemento());
    const editor = new ProtectedPathsEditor(settings, copied);
    const projectText = JSON.stringify({ contextPrune: { protectedPaths: ["src/**"] } });
    try {
      writeSettingsText(projectFile(), projectText);
      const guide = path.join(workspaceDir(), "docs", "restricted-guide.md");
      fs.mkdirSync(path.dirname(guide), { recursive: true });
      fs.writeFileSync(guide, "# guide\n");
      const adding = new ScriptedPrompter((items) => items[0], () => undefined);
      editor.prompter = adding;
      assert.equal(await editor.add(vscode.Uri.file(guide)), undefined);
      assert.deepEqual(adding.picks[1]!.offered, ["Global settings"], "the project's file is not offered as a target");

      const removing = new ScriptedPrompter();
      editor.prompter = removing;
      const folder = vscode.workspace.workspaceFolders![0]!;
      assert.equal(await editor.remove({ folder, pattern: "src/**", source: "project" }), false);
      assert.deepEqual(removing.messages, [{ level: "error", text: `Pi Pruner: this workspace is not trusted, so ${projectFile()} is neither read nor changed.` }]);
      assert.equal(fs.readFileSync(projectFile(), "utf8"), projectText, "the project's file is unchanged");
      fs.rmSync(guide);
    } finally {
      copied.dispose();
      settings.dispose();
      granted.dispose();
    }
  });

  it("the manifest declares limited support in Restricted Mode, ignores a workspace's piPruner.agentDir there, and hides Add to protectedPaths", async () => {
    const manifest = vscode.extensions.getExtension("pi-pruner.pi-pruner-vscode")!.packageJSON as {
      capabilities: { untrustedWorkspaces: { supported: unknown; description: string; restrictedConfigurations: string[] } };
      contributes: { menus: Record<string, { command: string; when?: string }[]>; commands: { command: string; enablement?: string }[] };
    };
    const restricted = manifest.capabilities.untrustedWorkspaces;
    assert.equal(restricted.supported, "limited");
    assert.match(restricted.description, /\.pi\/settings\.json is not read/);
    assert.deepEqual(restricted.restrictedConfigurations, ["piPruner.agentDir"]);
    const add = manifest.contributes.commands.find((c) => c.command === "piPruner.addToProtectedPaths")!;
    assert.equal(add.enablement, "isWorkspaceTrusted");
    for (const [menu, items] of Object.entries(manifest.contributes.menus)) {
      for (const item of items.filter((i) => i.command === "piPruner.addToProtectedPaths")) {
        assert.match(item.when ?? "", /isWorkspaceTrusted/, `${menu} offers Add to protectedPaths only in a trusted workspace`);
      }
    }
  });
});
