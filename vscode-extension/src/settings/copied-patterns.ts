// Patterns the editor copied into a settings file along with an edit: a protectedPaths list in a
// file replaces the one it inherits, so the first edit there copies the inherited patterns in.
// Pi's settings are plain JSON (no room for a note), so the record lives in the editor's global
// state, per settings file, and lets the Protected Files view say "copied from default".
import * as vscode from "vscode";

/** Where a copied pattern came from: the built-in default list, or the global settings file's list. */
export type CopiedFrom = "default" | "global";

/** A file's copied patterns, pattern → where it came from. */
export type CopiedRecord = Readonly<Record<string, CopiedFrom>>;

const COPIED_KEY = "piPruner.copiedPatterns";

/** Why patterns inherited from `from` were copied in with a file's first list. */
export function whyCopied(from: CopiedFrom): string {
  return from === "global" ? "the project's own list replaces the global one" : "a list in a settings file replaces the default";
}

export class CopiedPatterns implements vscode.Disposable {
  private readonly memory: vscode.Memento;
  private records: Record<string, CopiedRecord>;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;

  constructor(memory: vscode.Memento) {
    this.memory = memory;
    const stored = memory.get<unknown>(COPIED_KEY);
    this.records = isRecordMap(stored) ? stored : {};
  }

  /** Where `pattern` in `file` was copied from, if the editor copied it there. */
  from(file: string, pattern: string): CopiedFrom | undefined {
    const record = this.records[file];
    return record && Object.hasOwn(record, pattern) ? record[pattern] : undefined;
  }

  /** The file's record, to put back with `restore` when an edit is undone. */
  snapshot(file: string): CopiedRecord {
    return this.records[file] ?? {};
  }

  /** `patterns` were just copied into `file`, whose list they now start (any older record of it is replaced). */
  recordCopy(file: string, patterns: readonly string[], from: CopiedFrom): void {
    this.restore(file, Object.fromEntries(patterns.map((pattern) => [pattern, from])));
  }

  /** `pattern` left the file, or the person chose it themselves: it is no longer a copy. */
  forget(file: string, pattern: string): void {
    const record = this.records[file];
    if (!record || !Object.hasOwn(record, pattern)) return;
    const { [pattern]: _removed, ...rest } = record;
    this.restore(file, rest);
  }

  /**
   * Drops what the file's own list no longer holds (everything when it has no list), so a list
   * deleted and written again by hand is not labelled a copy.
   */
  reconcile(file: string, ownList: readonly string[] | undefined): void {
    const record = this.records[file];
    if (!record) return;
    const kept = Object.fromEntries(Object.entries(record).filter(([pattern]) => ownList?.includes(pattern)));
    if (Object.keys(kept).length !== Object.keys(record).length) this.restore(file, kept);
  }

  restore(file: string, record: CopiedRecord): void {
    const { [file]: _previous, ...others } = this.records;
    this.records = Object.keys(record).length === 0 ? others : { ...others, [file]: record };
    void this.memory.update(COPIED_KEY, this.records);
    this.changed.fire();
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function isRecordMap(value: unknown): value is Record<string, CopiedRecord> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Object.values(value).every(
    (record) =>
      typeof record === "object" && record !== null && !Array.isArray(record) && Object.values(record).every((from) => from === "default" || from === "global"),
  );
}
