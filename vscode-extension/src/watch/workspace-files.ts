// The files of each workspace folder, listed once and kept until files are created or deleted,
// so the Protected Files view can show which files each pattern protects without a search per pattern.
import * as vscode from "vscode";

/** Folders nobody wants matched (and that are slow to list). */
const EXCLUDE = "**/{node_modules,.git}/**";
const MAX_FILES = 20_000;

export interface FolderFiles {
  /** Paths relative to the folder, `/`-separated, sorted. */
  relativePaths: string[];
  /** The listing stopped at MAX_FILES. */
  truncated: boolean;
}

export class WorkspaceFiles implements vscode.Disposable {
  private readonly cache = new Map<string, Promise<FolderFiles>>();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly watcher: vscode.FileSystemWatcher;
  private timer: NodeJS.Timeout | undefined;

  constructor() {
    this.watcher = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
    const invalidate = () => {
      if (this.timer) return;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.cache.clear();
        this.changed.fire();
      }, 300);
    };
    this.watcher.onDidCreate(invalidate);
    this.watcher.onDidDelete(invalidate);
  }

  list(folder: vscode.WorkspaceFolder): Promise<FolderFiles> {
    const key = folder.uri.toString();
    let files = this.cache.get(key);
    if (!files) {
      files = (async () => {
        const uris = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, "**/*"), EXCLUDE, MAX_FILES);
        const relativePaths = uris.map((uri) => vscode.workspace.asRelativePath(uri, false).replace(/\\/g, "/")).sort();
        return { relativePaths, truncated: uris.length >= MAX_FILES };
      })();
      this.cache.set(key, files);
    }
    return files;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.watcher.dispose();
    this.changed.dispose();
  }
}
