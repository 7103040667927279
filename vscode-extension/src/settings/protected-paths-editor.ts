// "Add to protectedPaths" (explorer) and "Remove from protectedPaths" (Protected Files view):
// the person picks the pattern and the settings file; the write goes through core's one settings
// writer, which keeps comments and formatting, writes atomically and refuses a file it cannot parse.
// A removal is offered back with Undo in its notification, which restores the file's exact text
// while the file still holds what the removal wrote. After each change the status bar says whether
// a running Pi session took it up (settings-pickup.ts).
import { posix } from "node:path";
import * as vscode from "vscode";
import { addProtectedPath, removeProtectedPath, revertSettingsFileChange, SettingsFileError, type SettingsFileChange } from "@pi-pruner/core";
import { windowPrompter, type Prompter } from "../prompter.ts";
import { whyCopied, type CopiedFrom, type CopiedPatterns, type CopiedRecord } from "./copied-patterns.ts";
import type { PatternSource, PruneSettings } from "./prune-settings.ts";
import type { SettingsEdit } from "./settings-pickup.ts";

const UNDO_ACTION = "Undo";

interface PatternChoice extends vscode.QuickPickItem {
  pattern: string;
}

interface TargetChoice extends vscode.QuickPickItem {
  target: "project" | "global";
  file: string;
}

/** The patterns offered for a workspace path: the path itself, its folder as a glob, and a `**` form. */
function patternChoices(relativePath: string, isDirectory: boolean): { pattern: string; detail: string }[] {
  const path = relativePath.replace(/\\/g, "/").replace(/\/+$/, "");
  const name = posix.basename(path);
  const parent = posix.dirname(path);
  const choices: { pattern: string; detail: string }[] = [];
  if (isDirectory) {
    choices.push({ pattern: `${path}/**`, detail: "every file in this folder" });
    choices.push({ pattern: `**/${name}/**`, detail: `every file in any folder named ${name}` });
  } else {
    choices.push({ pattern: path, detail: "this file only" });
    if (parent !== ".") choices.push({ pattern: `${parent}/**`, detail: "every file in its folder" });
    choices.push({ pattern: `**/${name}`, detail: `any file named ${name}` });
  }
  const seen = new Set<string>();
  return choices.filter((c) => !seen.has(c.pattern) && seen.add(c.pattern));
}

function describeError(error: unknown): string {
  if (error instanceof SettingsFileError) return error.message;
  return `could not change the settings: ${error instanceof Error ? error.message : String(error)}`;
}

/** The sentence telling that inherited patterns were copied into the file along with an edit. */
function describeCopy(copied: readonly string[], from: CopiedFrom): string {
  const one = copied.length === 1;
  return ` The ${from} ${one ? "pattern" : "patterns"} ${copied.join(", ")} ${one ? "was" : "were"} copied there too: ${whyCopied(from)}.`;
}

export class ProtectedPathsEditor {
  prompter: Prompter = windowPrompter;

  private readonly settings: PruneSettings;
  private readonly copied: CopiedPatterns;
  /** Told of every change that applies to a folder, to say whether a running session took it up. */
  private readonly pickup: { track(edit: SettingsEdit): void } | undefined;

  constructor(settings: PruneSettings, copied: CopiedPatterns, pickup?: { track(edit: SettingsEdit): void }) {
    this.settings = settings;
    this.copied = copied;
    this.pickup = pickup;
  }

  /** A change of `pattern` in the folder `cwd`'s effective protectedPaths, written at `writtenAt`. */
  private track(cwd: string, pattern: string, protect: boolean, writtenAt: number): void {
    this.pickup?.track({
      description: `${pattern} ${protect ? "added to" : "removed from"} protectedPaths`,
      cwd,
      writtenAt,
      holds: (config) => config.protectedPaths.includes(pattern) === protect,
    });
  }

  /** Where an edit of `target` copies inherited patterns from: the project inherits the global list when there is one. */
  private static copySource(target: "project" | "global", pathsSource: PatternSource): CopiedFrom {
    return target === "project" && pathsSource === "global" ? "global" : "default";
  }

  /** Explorer right-click (uri, selected uris) or the palette (the active editor's file). */
  async add(uri?: vscode.Uri): Promise<{ pattern: string; file: string } | undefined> {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    if (!target || target.scheme !== "file") {
      this.prompter.error("Pi Pruner: choose a file or folder of the workspace to protect.");
      return undefined;
    }
    const folder = vscode.workspace.getWorkspaceFolder(target);
    if (!folder) {
      this.prompter.error(`Pi Pruner: ${target.fsPath} is not in an open workspace folder.`);
      return undefined;
    }
    let isDirectory = false;
    try {
      isDirectory = (await vscode.workspace.fs.stat(target)).type === vscode.FileType.Directory;
    } catch {
      // A path that just went away is offered as a file.
    }
    const relativePath = vscode.workspace.asRelativePath(target, false).replace(/\\/g, "/");
    const effective = this.settings.forCwd(folder.uri.fsPath);
    const current = new Set(effective.loaded.config.protectedPaths);
    const patterns: PatternChoice[] = patternChoices(relativePath, isDirectory).map((c) => ({
      label: c.pattern,
      description: current.has(c.pattern) ? "already protected" : undefined,
      detail: c.detail,
      pattern: c.pattern,
    }));
    const pattern = await this.prompter.pick(patterns, { title: "Add to protectedPaths", placeHolder: "The pattern to protect from pruning" });
    if (!pattern) return undefined;
    // In Restricted Mode the project's settings file is neither read nor written.
    const targets: TargetChoice[] = [
      ...(effective.projectTrusted ? [{ label: "Project settings", description: effective.files.project, detail: "this workspace only", target: "project" as const, file: effective.files.project }] : []),
      { label: "Global settings", description: effective.files.global, detail: "every project", target: "global", file: effective.files.global },
    ];
    const where = await this.prompter.pick(targets, { title: `Add ${pattern.pattern} to protectedPaths in…` });
    if (!where) return undefined;
    const base = where.target === "global" ? effective.globalPaths : effective.loaded.config.protectedPaths;
    try {
      const writtenAt = Date.now();
      const result = addProtectedPath({ file: where.file, pattern: pattern.pattern, effective: base });
      const from = ProtectedPathsEditor.copySource(where.target, effective.pathsSource);
      if (result.copied.length > 0) this.copied.recordCopy(where.file, result.copied, from);
      // Chosen by the person now, so no longer a copy.
      this.copied.forget(where.file, pattern.pattern);
      this.settings.invalidate();
      const copy = result.copied.length > 0 ? describeCopy(result.copied, from) : "";
      if (!result.added) this.prompter.info(`Pi Pruner: ${pattern.pattern} is already in protectedPaths of ${where.file}.`);
      else if (where.target === "global" && effective.pathsSource === "project") {
        this.prompter.warn(`Pi Pruner: added ${pattern.pattern} to ${where.file}, but this project's own protectedPaths list replaces the global one, so it does not apply here.${copy}`);
      } else {
        this.prompter.info(`Pi Pruner: added ${pattern.pattern} to protectedPaths in ${where.file}.${copy}`);
        this.track(folder.uri.fsPath, pattern.pattern, true, writtenAt);
      }
      return { pattern: pattern.pattern, file: where.file };
    } catch (error) {
      this.prompter.error(`Pi Pruner: ${describeError(error)}`);
      return undefined;
    }
  }

  /** A pattern node of the Protected Files view, or (palette) a pattern picked from the effective list. */
  async remove(node?: { folder: vscode.WorkspaceFolder; pattern: string; source: PatternSource; overridden?: boolean }): Promise<boolean> {
    let request = node;
    if (!request) {
      const folders = vscode.workspace.workspaceFolders ?? [];
      const items = folders.flatMap((folder) => {
        const effective = this.settings.forCwd(folder.uri.fsPath);
        return effective.loaded.config.protectedPaths.map((pattern) => ({
          label: pattern,
          description: `${effective.pathsSource}${folders.length > 1 ? ` · ${folder.name}` : ""}`,
          request: { folder, pattern, source: effective.pathsSource },
        }));
      });
      if (items.length === 0) {
        this.prompter.info("Pi Pruner: protectedPaths is empty.");
        return false;
      }
      request = (await this.prompter.pick(items, { title: "Remove from protectedPaths" }))?.request;
      if (!request) return false;
    }
    const effective = this.settings.forCwd(request.folder.uri.fsPath);
    let file: string;
    let target: "project" | "global";
    if (request.source === "default") {
      // The default list is in no file: removing a pattern writes the list without it.
      const where = await this.prompter.pick<TargetChoice>(
        [
          ...(effective.projectTrusted ? [{ label: "Project settings", description: effective.files.project, target: "project" as const, file: effective.files.project }] : []),
          { label: "Global settings", description: effective.files.global, target: "global", file: effective.files.global },
        ],
        { title: `${request.pattern} is a default; write the list without it to…` },
      );
      if (!where) return false;
      file = where.file;
      target = where.target;
    } else {
      target = request.source === "global" || request.overridden ? "global" : "project";
      file = target === "global" ? effective.files.global : effective.files.project;
    }
    if (target === "project" && !effective.projectTrusted) {
      this.prompter.error(`Pi Pruner: this workspace is not trusted, so ${effective.files.project} is neither read nor changed.`);
      return false;
    }
    const base = target === "global" ? effective.globalPaths : effective.loaded.config.protectedPaths;
    const recordBefore = this.copied.snapshot(file);
    const cwd = request.folder.uri.fsPath;
    try {
      const writtenAt = Date.now();
      const result = removeProtectedPath({ file, pattern: request.pattern, effective: base });
      this.copied.forget(file, request.pattern);
      const from = ProtectedPathsEditor.copySource(target, effective.pathsSource);
      if (result.copied.length > 0) this.copied.recordCopy(file, result.copied, from);
      this.settings.invalidate();
      if (result.removed && result.change) {
        const message = `Pi Pruner: removed ${request.pattern} from protectedPaths in ${file}${result.list.length === 0 ? " (the list is now empty: path protection is off)" : ""}.${result.copied.length > 0 ? describeCopy(result.copied, from) : ""}`;
        // A global list the project's own replaces, for one, does not reach this folder's sessions.
        if (!this.settings.forCwd(cwd).loaded.config.protectedPaths.includes(request.pattern)) this.track(cwd, request.pattern, false, writtenAt);
        void this.offerUndo(message, request.pattern, result.change, recordBefore, cwd);
      } else this.prompter.info(`Pi Pruner: ${request.pattern} is not in protectedPaths of ${file}.`);
      return result.removed;
    } catch (error) {
      this.prompter.error(`Pi Pruner: ${describeError(error)}`);
      return false;
    }
  }

  /** Shows the removal's notification; its Undo gives the file back the exact text it had, unless it changed since. */
  private async offerUndo(message: string, pattern: string, change: SettingsFileChange, recordBefore: CopiedRecord, cwd: string): Promise<void> {
    if (!(await this.prompter.offer(message, UNDO_ACTION))) return;
    try {
      const writtenAt = Date.now();
      revertSettingsFileChange(change);
      this.copied.restore(change.file, recordBefore);
      this.settings.invalidate();
      this.prompter.info(`Pi Pruner: undone: ${change.file} is as it was before ${pattern} was removed.`);
      if (this.settings.forCwd(cwd).loaded.config.protectedPaths.includes(pattern)) this.track(cwd, pattern, true, writtenAt);
    } catch (error) {
      if (error instanceof SettingsFileError && error.code === "changed-since") {
        this.prompter.warn(`Pi Pruner: did not undo the removal of ${pattern}: ${error.message}.`);
      } else this.prompter.error(`Pi Pruner: did not undo the removal of ${pattern}: ${describeError(error)}`);
    }
  }
}
