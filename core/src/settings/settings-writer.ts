// The one writer of Pi settings files (CLI `protect`, Pi `/pruner` commands, VS Code right-click).
// Edits go through jsonc-parser so comments, formatting and key order survive; writes are atomic
// (temp file + rename) and serialised between processes by a lock file next to the settings file.
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { applyEdits, modify, parse as parseJsonc, parseTree, type FormattingOptions, type Node as JsonNode, type ParseError } from "jsonc-parser";
import { describeParseError, readFailure, settingsTextProblem } from "./settings-reader.ts";
import { fileSettingsStorage, type SettingsStorage } from "./settings-storage.ts";
import { describeValue, ownList, SETTINGS_KEY } from "./config.ts";
import { globPatternProblem } from "./protection.ts";
import { isRecord } from "../shapes/json.ts";

export type SettingsFileErrorCode =
  | "unparsable"
  | "unreadable"
  | "not-object"
  | "write-failed"
  | "conflict"
  | "read-only"
  | "duplicate-key"
  | "changed-since";

export class SettingsFileError extends Error {
  readonly code: SettingsFileErrorCode;
  readonly file: string;

  constructor(code: SettingsFileErrorCode, file: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SettingsFileError";
    this.code = code;
    this.file = file;
  }
}

export interface SettingsEdit {
  path: (string | number)[];
  /** undefined removes the key (or, at an array index, the item). */
  value: unknown;
  /** Insert `value` into the array at this index instead of replacing what is there. */
  insert?: boolean;
}

/** One write the writer made, so it can be taken back: the file's text before (undefined: there was no file) and the text written. */
export interface SettingsFileChange {
  file: string;
  previousText: string | undefined;
  writtenText: string;
}

const BYTE_ORDER_MARK = "\uFEFF";
const LOCK_WAIT_MS = 5000;
const STALE_LOCK_MS = 10_000;
const WRITE_ATTEMPTS = 8;

interface Snapshot {
  exists: boolean;
  /** The file's text as stored, byte order mark included. */
  raw: string;
  /** Permission bits of the existing file. */
  mode?: number;
  /** Which version of the file was read (see StoredFile.version). */
  version?: string;
}

function errnoCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function sleepSync(milliseconds: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, milliseconds);
}

function readSnapshot(storage: SettingsStorage, file: string, target = file): Snapshot {
  try {
    const { text, mode, version } = storage.readFile(target);
    return { exists: true, raw: text, mode, version };
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return { exists: false, raw: "" };
    if (code === "EFBIG") {
      throw new SettingsFileError("unparsable", file, `${file} is ${readFailure(error)}, so it is not edited; fix it by hand, it was left unchanged`, { cause: error });
    }
    throw new SettingsFileError("unreadable", file, `cannot read ${file}: ${readFailure(error)}`, { cause: error });
  }
}

/**
 * The first key along `path` that the object holds more than once: jsonc-parser would edit the
 * first, while Pi and every reader take the last, so an edit there would silently not apply.
 */
function duplicateKeyOnPath(tree: JsonNode | undefined, path: readonly (string | number)[]): string | undefined {
  let node = tree;
  const walked: string[] = [];
  for (const segment of path) {
    if (!node || node.type !== "object" || typeof segment !== "string") return undefined;
    const properties = (node.children ?? []).filter((property) => property.children?.[0]?.value === segment);
    walked.push(segment);
    if (properties.length > 1) return walked.join(".");
    node = properties[0]?.children?.[1];
  }
  return undefined;
}

export function readSettingsText(path: string, storage: SettingsStorage = fileSettingsStorage): { text: string; exists: boolean } {
  const snapshot = readSnapshot(storage, path);
  return { text: snapshot.raw, exists: snapshot.exists };
}

/** Indentation and line endings as the file already uses them; 2 spaces and \n for a new file. */
export function inferFormatting(text: string): FormattingOptions {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  let smallestSpaceIndent = Number.POSITIVE_INFINITY;
  for (const line of text.split(/\r?\n/)) {
    const indent = /^([ \t]+)\S/.exec(line)?.[1];
    if (indent === undefined) continue;
    if (indent.startsWith("\t")) return { insertSpaces: false, tabSize: 4, eol };
    smallestSpaceIndent = Math.min(smallestSpaceIndent, indent.length);
  }
  const tabSize = Number.isFinite(smallestSpaceIndent) ? smallestSpaceIndent : 2;
  return { insertSpaces: true, tabSize, eol };
}

/**
 * The edited text must parse and hold each edit's value at its path: a check of the edit library,
 * so that a text it got wrong is never written.
 */
function assertEditsLanded(file: string, text: string, edits: readonly SettingsEdit[]): void {
  const errors: ParseError[] = [];
  const parsed: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  const landed = errors.length === 0 && edits.every((edit) => jsonEqual(valueAt(parsed, edit.path), edit.value));
  if (!landed) {
    throw new SettingsFileError("write-failed", file, `could not edit ${file} safely (the edited text did not check out); it was left unchanged`);
  }
}

/** The next text of the file, or undefined when the edits change nothing. Throws before any write. */
function planUpdate(
  file: string,
  snapshot: Snapshot,
  computeEdits: (settings: Record<string, unknown>) => SettingsEdit[],
): string | undefined {
  const hasByteOrderMark = snapshot.raw.startsWith(BYTE_ORDER_MARK);
  const body = hasByteOrderMark ? snapshot.raw.slice(1) : snapshot.raw;
  const isBlank = body.trim() === "";
  let settings: Record<string, unknown> = {};
  if (!isBlank) {
    // Refused before parsing, as the reader refuses it: the parser recurses once per level.
    const problem = settingsTextProblem(body);
    if (problem !== undefined) {
      throw new SettingsFileError("unparsable", file, `${file} is ${problem}, so it is not edited; fix it by hand, it was left unchanged`);
    }
    const errors: ParseError[] = [];
    const parsed: unknown = parseJsonc(body, errors, { allowTrailingComma: true, disallowComments: false });
    if (errors.length > 0) {
      throw new SettingsFileError(
        "unparsable",
        file,
        `${file} is not valid JSON (${describeParseError(body, errors[0])}); fix it by hand, it was left unchanged`,
      );
    }
    if (!isRecord(parsed)) {
      throw new SettingsFileError(
        "not-object",
        file,
        `${file} does not hold a JSON object at the top (got ${describeValue(parsed)}); it was left unchanged`,
      );
    }
    settings = parsed;
  }

  const originalText = isBlank ? "{}" : body;
  const formattingOptions = inferFormatting(isBlank ? "" : body);
  let text = originalText;
  const edits = computeEdits(settings);
  const tree = isBlank || edits.length === 0 ? undefined : parseTree(body, [], { allowTrailingComma: true, disallowComments: false });
  for (const edit of edits) {
    const duplicate = duplicateKeyOnPath(tree, edit.path);
    if (duplicate !== undefined) {
      throw new SettingsFileError(
        "duplicate-key",
        file,
        `${file} has "${duplicate}" more than once, so it is unclear which one applies; remove the duplicate by hand, it was left unchanged`,
      );
    }
  }
  for (const edit of edits) {
    try {
      text = applyEdits(text, modify(text, edit.path, edit.value, { formattingOptions, isArrayInsertion: edit.insert === true }));
    } catch (error) {
      throw new SettingsFileError(
        "not-object",
        file,
        `cannot set ${edit.path.join(".")} in ${file}: ${error instanceof Error ? error.message : String(error)}; it was left unchanged`,
        { cause: error },
      );
    }
  }
  if (text === originalText) return undefined;
  assertEditsLanded(file, text, edits);
  if (isBlank) text += formattingOptions.eol ?? "\n";
  return (hasByteOrderMark ? BYTE_ORDER_MARK : "") + text;
}

/** An existing file this process may not write is refused, not replaced (a rename would bypass its mode). */
function assertWritable(storage: SettingsStorage, target: string, file: string): void {
  try {
    storage.checkWritable(target);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return;
    throw new SettingsFileError("read-only", file, `${file} is read-only (${code ?? String(error)}); it was left unchanged`, { cause: error });
  }
}

function acquireLock(storage: SettingsStorage, target: string, file: string): () => void {
  const lockPath = `${target}.lock`;
  const token = `${process.pid} ${randomBytes(8).toString("hex")}\n`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      storage.createFile(lockPath, token);
      return () => releaseLock(storage, lockPath, token);
    } catch (error) {
      if (errnoCode(error) !== "EEXIST") {
        throw new SettingsFileError("write-failed", file, `cannot create lock file ${lockPath}: ${errnoCode(error) ?? String(error)}`, {
          cause: error,
        });
      }
    }
    if (isStaleLock(storage, lockPath)) {
      removeQuietly(storage, lockPath);
      continue;
    }
    if (Date.now() > deadline) {
      throw new SettingsFileError(
        "conflict",
        file,
        `${file} is being changed by another process (lock file ${lockPath}); try again`,
      );
    }
    sleepSync(5 + Math.random() * 20);
  }
}

function isStaleLock(storage: SettingsStorage, lockPath: string): boolean {
  const modifiedAt = storage.modifiedAt(lockPath);
  return modifiedAt !== undefined && Date.now() - modifiedAt > STALE_LOCK_MS;
}

function releaseLock(storage: SettingsStorage, lockPath: string, token: string): void {
  try {
    // Only our own lock: after a stale-lock takeover the file may belong to someone else.
    if (storage.readFile(lockPath).text === token) storage.remove(lockPath);
  } catch {
    // Already gone.
  }
}

function removeQuietly(storage: SettingsStorage, path: string): void {
  try {
    storage.remove(path);
  } catch {
    // Already gone.
  }
}

/**
 * Temp file in the same directory, then a rename that happens only while the file is still the one
 * in `snapshot`. Returns false (nothing written) when the file changed meanwhile.
 */
function writeAtomically(storage: SettingsStorage, target: string, file: string, text: string, snapshot: Snapshot): boolean {
  const tempPath = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  let renamed = false;
  try {
    // A new file keeps the umask's bits; an existing one's bits are carried over exactly.
    storage.createFile(tempPath, text, { mode: snapshot.mode, durable: true });
    const expected = { exists: snapshot.exists, text: snapshot.raw, version: snapshot.version };
    renamed = storage.replaceIfUnchanged(tempPath, target, expected);
    return renamed;
  } catch (error) {
    throw new SettingsFileError("write-failed", file, `cannot write ${file}: ${errnoCode(error) ?? String(error)}`, { cause: error });
  } finally {
    if (!renamed) removeQuietly(storage, tempPath);
  }
}

/**
 * Read-modify-write with edits computed from the file's current settings. `computeEdits` may run
 * more than once (each attempt starts from what is on disk) and must depend only on its argument.
 * Two writers serialise on the lock, and each re-reads the file once it holds it, so both edits
 * land; a change by someone who ignores the lock is noticed before the rename and the edit redone.
 */
export function transformSettingsFile(
  file: string,
  computeEdits: (settings: Record<string, unknown>) => SettingsEdit[],
  storage: SettingsStorage = fileSettingsStorage,
): { changed: boolean } {
  return { changed: writeTransformed(file, computeEdits, storage) !== undefined };
}

/** transformSettingsFile, telling what it wrote over (undefined: nothing written). */
function writeTransformed(
  file: string,
  computeEdits: (settings: Record<string, unknown>) => SettingsEdit[],
  storage: SettingsStorage,
): SettingsFileChange | undefined {
  const target = storage.resolveTarget(file);
  const first = readSnapshot(storage, file, target);
  if (planUpdate(file, first, computeEdits) === undefined) return undefined;
  if (first.exists) assertWritable(storage, target, file);
  makeParentDirectory(storage, target, file);
  const releaseLock = acquireLock(storage, target, file);
  try {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const snapshot = readSnapshot(storage, file, target);
      const nextText = planUpdate(file, snapshot, computeEdits);
      if (nextText === undefined) return undefined;
      if (writeAtomically(storage, target, file, nextText, snapshot)) {
        return { file, previousText: snapshot.exists ? snapshot.raw : undefined, writtenText: nextText };
      }
      sleepSync(10 + Math.random() * 40);
    }
  } finally {
    releaseLock();
  }
  throw new SettingsFileError("conflict", file, `${file} changed while writing; nothing was written, try again`);
}

function makeParentDirectory(storage: SettingsStorage, target: string, file: string): void {
  try {
    storage.makeDirectory(dirname(target));
  } catch (error) {
    throw new SettingsFileError("write-failed", file, `cannot create ${dirname(target)}: ${errnoCode(error) ?? String(error)}`, {
      cause: error,
    });
  }
}

/**
 * Takes `change` back: the file gets its previous text again (or, when the change created it, is
 * removed), but only while it holds exactly the text the change wrote. A file edited since, by a
 * person, Pi or another writer, is left as it is ("changed-since"): its edit is never clobbered.
 */
export function revertSettingsFileChange(change: SettingsFileChange, storage: SettingsStorage = fileSettingsStorage): void {
  const { file } = change;
  const target = storage.resolveTarget(file);
  const changedSince = () =>
    new SettingsFileError("changed-since", file, `${file} has changed since that edit, so it cannot be taken back without losing the newer change; it was left as it is`);
  const holdsWrittenText = (snapshot: Snapshot) => snapshot.exists && snapshot.raw === change.writtenText;
  if (!holdsWrittenText(readSnapshot(storage, file, target))) throw changedSince();
  assertWritable(storage, target, file);
  const releaseLock = acquireLock(storage, target, file);
  try {
    const snapshot = readSnapshot(storage, file, target);
    if (!holdsWrittenText(snapshot)) throw changedSince();
    if (change.previousText === undefined) {
      try {
        storage.remove(target);
      } catch (error) {
        throw new SettingsFileError("write-failed", file, `cannot remove ${file}: ${errnoCode(error) ?? String(error)}`, { cause: error });
      }
      return;
    }
    if (!writeAtomically(storage, target, file, change.previousText, snapshot)) throw changedSince();
  } finally {
    releaseLock();
  }
}

export function updateSettingsFile(path: string, edits: SettingsEdit[], storage?: SettingsStorage): { changed: boolean } {
  return transformSettingsFile(path, () => edits, storage);
}

// ---------------------------------------------------------------------------------------------
// contextPrune helpers

function pruneBlockOf(settings: Record<string, unknown>): Record<string, unknown> | undefined {
  const block = Object.hasOwn(settings, SETTINGS_KEY) ? settings[SETTINGS_KEY] : undefined;
  return isRecord(block) ? block : undefined;
}

/** The file's own protectedPaths when it sets a valid list (of strings). */
function ownPaths(settings: Record<string, unknown>): string[] | undefined {
  return ownList(pruneBlockOf(settings), "protectedPaths");
}

/** The file's own list, else the effective one (which an edit then copies into the file). */
function protectedPathsBase(settings: Record<string, unknown>, effective: readonly string[]): string[] {
  return [...new Set(ownPaths(settings) ?? effective)];
}

/**
 * The file's own list when it can be edited item by item (a list of distinct strings): then items
 * are inserted or removed where they are, and comments between the other items stay.
 */
function ownEditableList(settings: Record<string, unknown>): string[] | undefined {
  const own = ownPaths(settings);
  return own && new Set(own).size === own.length ? own : undefined;
}

function assertPattern(pattern: string): void {
  if (typeof pattern !== "string" || pattern.trim() === "") throw new TypeError("a protectedPaths pattern must be a non-empty string");
  // A pattern the reader would drop is not written: it would protect nothing.
  const problem = globPatternProblem(pattern);
  if (problem !== undefined) throw new TypeError(`the pattern is not added: ${problem}`);
}

const PROTECTED_PATHS_KEY_PATH = [SETTINGS_KEY, "protectedPaths"];

/** What a protectedPaths edit did to the file. */
export interface ProtectedPathsOutcome {
  /** The file's list after the edit. */
  list: string[];
  /**
   * Patterns of `effective` written into the file along with the edit because the file had no
   * list of its own (a list there replaces the one it inherits, so the inherited one is copied).
   */
  copied: string[];
  /** What was written over, for an undo; undefined when nothing was written. */
  change: SettingsFileChange | undefined;
}

/**
 * Appends `pattern` to contextPrune.protectedPaths (no duplicates). Starts from the file's own
 * list, or from the effective list when the file has none, so the default is never dropped.
 */
export function addProtectedPath(opts: { file: string; pattern: string; effective: readonly string[]; storage?: SettingsStorage }): ProtectedPathsOutcome & {
  added: boolean;
} {
  assertPattern(opts.pattern);
  let outcome = { added: false, list: [...opts.effective], copied: [] as string[] };
  const change = writeTransformed(opts.file, (settings) => {
    const base = protectedPathsBase(settings, opts.effective);
    if (base.includes(opts.pattern)) {
      outcome = { added: false, list: base, copied: [] };
      return [];
    }
    const list = [...base, opts.pattern];
    const own = ownEditableList(settings);
    outcome = { added: true, list, copied: ownPaths(settings) ? [] : base };
    if (own) return [{ path: [...PROTECTED_PATHS_KEY_PATH, own.length], value: opts.pattern, insert: true }];
    return [{ path: PROTECTED_PATHS_KEY_PATH, value: list }];
  }, opts.storage ?? fileSettingsStorage);
  return { ...outcome, change };
}

/** Removes every occurrence of `pattern`. Removing the last one writes `[]`, which turns path protection off. */
export function removeProtectedPath(opts: { file: string; pattern: string; effective: readonly string[]; storage?: SettingsStorage }): ProtectedPathsOutcome & {
  removed: boolean;
} {
  let outcome = { removed: false, list: [...opts.effective], copied: [] as string[] };
  const change = writeTransformed(opts.file, (settings) => {
    const base = protectedPathsBase(settings, opts.effective);
    if (!base.includes(opts.pattern)) {
      outcome = { removed: false, list: base, copied: [] };
      return [];
    }
    const list = base.filter((item) => item !== opts.pattern);
    outcome = { removed: true, list, copied: ownPaths(settings) ? [] : list };
    // (Not item by item: jsonc-parser's removal of a last item can leave a stray quote behind.)
    return [{ path: PROTECTED_PATHS_KEY_PATH, value: list }];
  }, opts.storage ?? fileSettingsStorage);
  return { ...outcome, change };
}

function valueAt(root: unknown, keyPath: readonly (string | number)[]): unknown {
  let node = root;
  for (const key of keyPath) {
    if (typeof key === "number") {
      if (!Array.isArray(node) || key >= node.length) return undefined;
      node = node[key];
      continue;
    }
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

function jsonEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (Array.isArray(left) && Array.isArray(right)) {
    return left.length === right.length && left.every((item, index) => jsonEqual(item, right[index]));
  }
  if (isRecord(left) && isRecord(right)) {
    const leftKeys = Object.keys(left);
    return leftKeys.length === Object.keys(right).length && leftKeys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]));
  }
  return false;
}

/** Sets (or with undefined, removes) contextPrune.<keyPath>. Values are written as given; validate them first. */
export function setPruneSetting(file: string, keyPath: string[], value: unknown, storage?: SettingsStorage): { changed: boolean } {
  if (keyPath.length === 0 || keyPath.some((key) => typeof key !== "string" || key === "")) {
    throw new TypeError("setPruneSetting needs a non-empty key path of non-empty strings");
  }
  const fullPath = [SETTINGS_KEY, ...keyPath];
  return transformSettingsFile(file, (settings) => (jsonEqual(valueAt(settings, fullPath), value) ? [] : [{ path: fullPath, value }]), storage);
}
