// The Protected Files view: the effective protectedPaths and protectedTools of each workspace
// folder, labelled with the settings file they come from (and, for a pattern the editor copied
// there from the default or global list, where it came from), and under each pattern the files it protects.
import { join } from "node:path";
import * as vscode from "vscode";
import { createPathMatcher } from "@pi-pruner/core";
import { whyCopied, type CopiedPatterns } from "../settings/copied-patterns.ts";
import { editorSetting } from "../settings/editor-settings.ts";
import type { EffectiveSettings, PatternSource, PruneSettings } from "../settings/prune-settings.ts";
import { oneLine, safeTooltip } from "../text.ts";
import type { WorkspaceFiles } from "../watch/workspace-files.ts";

export type ProtectedNode =
  | { kind: "folder"; id: string; folder: vscode.WorkspaceFolder }
  | { kind: "pattern"; id: string; folder: vscode.WorkspaceFolder; pattern: string; source: PatternSource; overridden: boolean }
  | { kind: "file"; id: string; folder: vscode.WorkspaceFolder; relativePath: string }
  | { kind: "tool"; id: string; folder: vscode.WorkspaceFolder; name: string; source: PatternSource }
  | { kind: "note"; id: string; text: string; icon: string; tooltip?: string };

const SOURCE_LABELS: Record<PatternSource, string> = {
  project: "project",
  global: "global",
  default: "default",
};

export class ProtectedTreeProvider implements vscode.TreeDataProvider<ProtectedNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ProtectedNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly parents = new Map<string, ProtectedNode | undefined>();
  private readonly subscriptions: vscode.Disposable[] = [];
  /** At most this many files are listed under one pattern (set again when the setting changes). */
  maxFilesPerPattern = editorSetting("protectedFiles.maxFilesPerPattern");

  private readonly settings: PruneSettings;
  private readonly files: WorkspaceFiles;
  private readonly copied: CopiedPatterns;

  constructor(settings: PruneSettings, files: WorkspaceFiles, copied: CopiedPatterns) {
    this.settings = settings;
    this.files = files;
    this.copied = copied;
    this.subscriptions.push(
      settings.onDidChange(() => this.refresh()),
      copied.onDidChange(() => this.refresh()),
      files.onDidChange(() => this.refresh()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.refresh()),
    );
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  effective(folder: vscode.WorkspaceFolder): EffectiveSettings {
    return this.settings.forCwd(folder.uri.fsPath);
  }

  getParent(node: ProtectedNode): ProtectedNode | undefined {
    return this.parents.get(node.id);
  }

  async getChildren(node?: ProtectedNode): Promise<ProtectedNode[]> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
    let children: ProtectedNode[];
    if (!node) {
      children = folders.length === 1 ? this.folderChildren(folders[0]!) : folders.map((folder) => ({ kind: "folder", id: `folder:${folder.uri.fsPath}`, folder }));
    } else if (node.kind === "folder") {
      children = this.folderChildren(node.folder);
    } else if (node.kind === "pattern") {
      children = await this.patternChildren(node);
    } else {
      children = [];
    }
    for (const child of children) this.parents.set(child.id, node);
    return children;
  }

  private folderChildren(folder: vscode.WorkspaceFolder): ProtectedNode[] {
    const effective = this.effective(folder);
    const base = folder.uri.fsPath;
    // A file read as it is (not unreadable or broken) tells which recorded copies it still holds.
    if (effective.loaded.project.error === undefined) this.copied.reconcile(effective.files.project, effective.ownPaths.project);
    if (effective.loaded.global.error === undefined) this.copied.reconcile(effective.files.global, effective.ownPaths.global);
    const nodes: ProtectedNode[] = [];
    if (!effective.projectTrusted) {
      nodes.push({
        kind: "note",
        id: `${base}#untrusted`,
        text: "Project settings not read: this workspace is not trusted",
        icon: "workspace-untrusted",
        tooltip: `Restricted Mode: ${effective.files.project} comes with the workspace and is not read, so only the global and default settings are shown. Trust the workspace to use the project's settings.`,
      });
    }
    for (const warning of effective.loaded.warnings) {
      nodes.push({ kind: "note", id: `${base}#warning:${warning.key}:${warning.message}`, text: warning.message, icon: "warning" });
    }
    const paths = effective.loaded.config.protectedPaths;
    for (const pattern of paths) {
      nodes.push({ kind: "pattern", id: `${base}#path:${pattern}`, folder, pattern, source: effective.pathsSource, overridden: false });
    }
    for (const pattern of effective.overriddenGlobalPaths) {
      nodes.push({ kind: "pattern", id: `${base}#overridden:${pattern}`, folder, pattern, source: "global", overridden: true });
    }
    if (paths.length === 0) {
      nodes.push({ kind: "note", id: `${base}#no-paths`, text: "protectedPaths is empty: path protection is off", icon: "circle-slash" });
    }
    for (const name of effective.loaded.config.protectedTools) {
      nodes.push({ kind: "tool", id: `${base}#tool:${name}`, folder, name, source: effective.toolsSource });
    }
    return nodes;
  }

  /** Workspace files the pattern protects, as Pi would see their paths (relative to the folder). */
  async matchingFiles(folder: vscode.WorkspaceFolder, pattern: string): Promise<{ relativePaths: string[]; truncated: boolean }> {
    const listing = await this.files.list(folder);
    const match = createPathMatcher([pattern]);
    const base = folder.uri.fsPath;
    const relativePaths = listing.relativePaths.filter((rel) => match(rel) !== undefined || match(join(base, rel)) !== undefined);
    return { relativePaths, truncated: listing.truncated };
  }

  private async patternChildren(node: Extract<ProtectedNode, { kind: "pattern" }>): Promise<ProtectedNode[]> {
    const { relativePaths, truncated } = await this.matchingFiles(node.folder, node.pattern);
    const nodes: ProtectedNode[] = relativePaths.slice(0, this.maxFilesPerPattern).map((relativePath) => ({
      kind: "file",
      id: `${node.id}/${relativePath}`,
      folder: node.folder,
      relativePath,
    }));
    const hidden = relativePaths.length - nodes.length;
    if (hidden > 0) nodes.push({ kind: "note", id: `${node.id}#more`, text: `… ${hidden} more`, icon: "ellipsis" });
    if (truncated) nodes.push({ kind: "note", id: `${node.id}#truncated`, text: "only the first 20,000 workspace files were searched", icon: "info" });
    if (relativePaths.length === 0) nodes.push({ kind: "note", id: `${node.id}#none`, text: "no workspace file matches", icon: "circle-slash" });
    return nodes;
  }

  getTreeItem(node: ProtectedNode): vscode.TreeItem {
    const none = vscode.TreeItemCollapsibleState.None;
    let item: vscode.TreeItem;
    switch (node.kind) {
      case "folder":
        item = new vscode.TreeItem(node.folder.name, vscode.TreeItemCollapsibleState.Expanded);
        item.iconPath = vscode.ThemeIcon.Folder;
        item.contextValue = "folder";
        break;
      case "pattern": {
        item = new vscode.TreeItem(node.pattern, node.overridden ? none : vscode.TreeItemCollapsibleState.Collapsed);
        const effective = this.effective(node.folder);
        const file = node.source === "project" ? effective.files.project : node.source === "global" ? effective.files.global : undefined;
        const copiedFrom = file && !node.overridden ? this.copied.from(file, node.pattern) : undefined;
        item.description = node.overridden
          ? "global · replaced by the project's list"
          : copiedFrom
            ? `${SOURCE_LABELS[node.source]} · copied from ${SOURCE_LABELS[copiedFrom]}`
            : SOURCE_LABELS[node.source];
        item.iconPath = new vscode.ThemeIcon("shield", new vscode.ThemeColor(node.overridden ? "disabledForeground" : "charts.green"));
        item.tooltip = safeTooltip(
          `protectedPaths pattern ${node.pattern}\n`,
          node.overridden
            ? `Set in ${effective.files.global}, but the project's own list (${effective.files.project}) replaces the global one, so it does not apply here.`
            : file
              ? `From ${file}.${copiedFrom ? ` Copied there from the ${copiedFrom} list when the editor wrote this file's first list, because ${whyCopied(copiedFrom)}.` : ""}`
              : effective.projectTrusted
                ? "The default: no settings file sets protectedPaths."
                : `The default: the global settings file sets no protectedPaths, and ${effective.files.project} is not read because the workspace is not trusted.`,
        );
        item.contextValue = `protectedPath.${node.overridden ? "overridden" : node.source}`;
        break;
      }
      case "file":
        item = new vscode.TreeItem(vscode.Uri.joinPath(node.folder.uri, ...node.relativePath.split("/")), none);
        item.label = node.relativePath;
        item.description = "";
        item.command = { command: "vscode.open", title: "Open", arguments: [vscode.Uri.joinPath(node.folder.uri, ...node.relativePath.split("/"))] };
        item.contextValue = "protectedFile";
        break;
      case "tool":
        item = new vscode.TreeItem(node.name, none);
        item.description = `protectedTools · ${SOURCE_LABELS[node.source]}`;
        item.iconPath = new vscode.ThemeIcon("tools", new vscode.ThemeColor("charts.green"));
        item.tooltip = safeTooltip(`Output of the tool ${node.name} is never pruned.`);
        item.contextValue = "protectedTool";
        break;
      case "note":
        item = new vscode.TreeItem(oneLine(node.text, 120), none);
        item.iconPath = new vscode.ThemeIcon(node.icon, node.icon === "warning" ? new vscode.ThemeColor("list.warningForeground") : undefined);
        item.tooltip = safeTooltip(node.tooltip ?? node.text);
        item.contextValue = "note";
        break;
    }
    item.id = node.id;
    return item;
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}
