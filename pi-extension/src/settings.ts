// Settings IO for the live pruner: reading the effective `contextPrune` block (project settings
// only for trusted projects, as Pi does), noticing when either settings file changed since, and
// writing changes through core's one settings writer.
import { lstatSync, statSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";
import { agentDirFrom, loadConfig, settingsPaths, type ConfigWarning, type PruneConfig } from "@pi-pruner/core";
import { setPruneSetting } from "@pi-pruner/core";

export interface LoadedSettings {
  config: PruneConfig;
  warnings: ConfigWarning[];
  globalFile: string;
  projectFile: string;
  /** The project settings file carries a `contextPrune` block. */
  projectHasBlock: boolean;
  /** The files as stat saw them just before they were read (see `settingsStamp`). */
  stamp: string;
  /** Files that exist but could not be read or parsed, with why (their settings are ignored). */
  unreadable: { path: string; error: string }[];
  /** Files that exist and hold nothing (no settings). */
  empty: string[];
  /** The stamp at which a file that turned empty was last held back (see `changedSettings`). */
  heldEmptyAt?: string;
}

/**
 * The effective settings for `cwd`. An untrusted project's `.pi/settings.json` is never opened
 * (it comes with whatever repository was cloned); its `contextPrune` block then does not apply.
 */
export function loadPrunerSettings(cwd: string, projectTrusted: boolean): LoadedSettings {
  const agentDir = agentDirFrom(process.env);
  const paths = settingsPaths({ agentDir, cwd });
  // Taken before the read: a write in between shows as a change at the next check, never as none.
  const stamp = settingsStamp(paths.global, paths.project, projectTrusted);
  const loaded = loadConfig({ agentDir, cwd, projectTrusted });
  return {
    config: loaded.config,
    warnings: loaded.warnings,
    globalFile: paths.global,
    projectFile: paths.project,
    projectHasBlock: loaded.projectBlock !== undefined,
    stamp,
    unreadable: [loaded.global, loaded.project].flatMap((f) => (f.error !== undefined ? [{ path: f.path, error: f.error }] : [])),
    empty: [loaded.global, loaded.project].flatMap((f) => (f.empty ? [f.path] : [])),
  };
}

/**
 * The settings files as stat sees them (inode, size, modification time; a missing file as such),
 * the project's only when it is trusted: any edit, save or replacement of either gives another
 * stamp, and telling costs two stats and no read. Never throws.
 */
function settingsStamp(globalFile: string, projectFile: string, projectTrusted: boolean): string {
  return `${fileStamp(globalFile)}|${projectTrusted ? fileStamp(projectFile) : "untrusted"}`;
}

function fileStamp(path: string): string {
  try {
    // A missing file (the usual project) answers without an exception: this runs before every request.
    const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
    if (!stat) return "none:ENOENT";
    return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}`;
  } catch (error) {
    return `none:${(error as NodeJS.ErrnoException).code ?? "?"}`;
  }
}

/**
 * What a check before a request found: new settings to use, new settings refused (the settings in
 * use stay), or a file that turned empty held back until the next request looks again.
 */
export type SettingsChange =
  | { kind: "changed"; settings: LoadedSettings }
  | { kind: "refused"; settings: LoadedSettings; problems: string[] }
  | { kind: "held"; settings: LoadedSettings };

/**
 * Whether the settings files changed since `current` was read, and if so what they say now. New
 * settings with a problem the settings in use did not have (a file that stopped parsing, a save
 * caught halfway, a value the validator refuses) are refused whole: the settings in use stay, with
 * the new stamp, until the files change again. A file that turned empty is what a save shows
 * between its truncate and its write: it is held back (the settings in use stay, with their old
 * stamp, so the next request looks again), and applies (as no settings, as Pi reads it) only when
 * that look finds it still empty and unchanged. Undefined when nothing changed. Never throws.
 */
export function changedSettings(current: LoadedSettings, cwd: string, projectTrusted: boolean): SettingsChange | undefined {
  if (settingsStamp(current.globalFile, current.projectFile, projectTrusted) === current.stamp) return undefined;
  const next = loadPrunerSettings(cwd, projectTrusted);
  const emptied = next.empty.some((file) => !current.empty.includes(file));
  if (emptied && current.heldEmptyAt !== next.stamp) return { kind: "held", settings: { ...current, heldEmptyAt: next.stamp } };
  // What was already wrong when the settings in use were read does not count again.
  const broken = next.unreadable.filter((file) => !current.unreadable.some((known) => known.path === file.path));
  const known = new Set(current.warnings.map((w) => w.message));
  const invalid = next.warnings.filter((w) => !known.has(w.message) && !next.unreadable.some((file) => file.path === w.key));
  const problems = [...broken.map((f) => `${f.path}: ${f.error}`), ...invalid.map((w) => w.message)];
  if (problems.length > 0) return { kind: "refused", settings: { ...current, stamp: next.stamp, heldEmptyAt: undefined }, problems };
  return { kind: "changed", settings: next };
}

/**
 * Whether the settings files may have changed, told without a syscall on a request's path (right
 * after Pi's copy of the context the first syscall is the slow one): the folders holding them are
 * watched, and so are their parents for the folders themselves, and an event naming a settings
 * file or its folder (the project's `.pi` deleted, made again, replaced) makes the next check due,
 * which stats them as `changedSettings` does. A folder made again is another folder: the watch
 * follows it there. A request only checks a mark, so a save lands at the first request after the
 * event reached the extension: events come through the event loop, which turns many times between
 * two requests (the model answers, tools run). Where watching cannot be trusted, every request
 * checks, as without a watch: a folder that cannot be watched (missing, no watches left, a file
 * system without events, a watcher that failed) or a settings file or folder that is a link (an
 * edit of its target elsewhere makes no event here).
 */
export class SettingsWatch {
  private watchers: FSWatcher[] = [];
  /** What is watched: the folders and the trust they were worked out for. */
  private watched = "";
  private changed = true;
  private unwatchable = false;
  /** A watched folder's name saw an event in its parent: the folder may be another one now (a watch stays on the old). */
  private folderMoved = false;

  /** Whether a request checks the settings files now; the events that made it due are forgotten. */
  due(projectTrusted: boolean): boolean {
    if (this.unwatchable || !this.watched.startsWith(`${projectTrusted}\n`)) return true;
    const due = this.changed;
    this.changed = false;
    return due;
  }

  /** The next request checks the files even if no event comes (a check that found a file it waits to see settle). */
  lookAgain(): void {
    this.changed = true;
  }

  /**
   * Watches what holds the files of `settings` (after they were read, or checked: `.pi` may have
   * appeared, or been made again); when that differs from what was watched, the next request
   * checks again, so nothing saved meanwhile is missed. Once watching failed, only settings just
   * read try again.
   */
  follow(settings: LoadedSettings, projectTrusted: boolean, justRead: boolean): void {
    if (this.unwatchable && !justRead) return;
    let targets: WatchTarget[] | undefined;
    try {
      targets = watchTargets(settings, projectTrusted);
    } catch {
      // A folder that cannot even be looked at: every request checks.
      targets = undefined;
    }
    const key = `${projectTrusted}\n${targets?.map((t) => `${t.folder}/${t.name ?? "*"}`).join("\n") ?? "unwatched"}`;
    if (key === this.watched && !this.unwatchable && !this.folderMoved) return;
    this.close();
    this.watched = key;
    this.changed = true;
    this.folderMoved = false;
    this.unwatchable = !targets || !targets.every((target) => this.add(target));
  }

  close(): void {
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    this.watched = "";
  }

  private add({ folder, name, isFolder }: WatchTarget): boolean {
    try {
      // Not persistent: a watch never keeps Pi running.
      const watcher = watch(folder, { persistent: false }, (_event, file) => {
        if (name !== undefined && file !== null && file !== name) return;
        this.changed = true;
        if (isFolder) this.folderMoved = true;
      });
      watcher.on("error", () => {
        this.unwatchable = true;
      });
      this.watchers.push(watcher);
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * A folder to watch and the entry in it whose events matter (any entry's when undefined); an entry
 * that is a watched folder itself (`isFolder`) may have been deleted, made again or replaced.
 */
interface WatchTarget {
  folder: string;
  name: string | undefined;
  isFolder?: true;
}

/**
 * What to watch, parents first (an event there while a folder is being watched is not missed):
 * the global file's folder, and its parent for the folder itself; for a trusted project its `.pi`
 * folder (any event) and the project folder for `.pi` itself, or only the project folder while
 * `.pi` is missing. Undefined when a settings file or its folder is a link. Throws when a folder
 * cannot be looked at.
 */
function watchTargets(settings: LoadedSettings, projectTrusted: boolean): WatchTarget[] | undefined {
  const files = projectTrusted ? [settings.globalFile, settings.projectFile] : [settings.globalFile];
  if (files.some((file) => isLink(file) || isLink(dirname(file)))) return undefined;
  const global = dirname(settings.globalFile);
  const targets: WatchTarget[] = [
    { folder: dirname(global), name: basename(global), isFolder: true },
    { folder: global, name: basename(settings.globalFile) },
  ];
  if (projectTrusted) {
    const project = dirname(settings.projectFile);
    targets.push({ folder: dirname(project), name: basename(project), isFolder: true });
    if (statSync(project, { throwIfNoEntry: false })?.isDirectory()) targets.push({ folder: project, name: undefined });
  }
  return targets;
}

function isLink(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
}

/**
 * Where a `/pruner` change is written: the project file when it already carries a
 * `contextPrune` block (so the change wins there), else the global file.
 */
export function settingsTarget(settings: LoadedSettings): string {
  return settings.projectHasBlock ? settings.projectFile : settings.globalFile;
}

export function writePrunerSetting(file: string, keyPath: string[], value: unknown): boolean {
  return setPruneSetting(file, keyPath, value).changed;
}
