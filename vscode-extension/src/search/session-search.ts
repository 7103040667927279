// Search across the listed sessions. A query starts a background scan of the sessions not yet
// indexed as they are now, newest first, bounded and cancellable, with a progress indicator; results
// are shown as they come (the index is asked again after each few sessions). Each session is read
// with its long bodies left on disk, then its bodies are read back a batch of entries at a time,
// indexed and dropped: the store's parsed sessions are not touched and nothing large is kept. A
// shown hit whose words lie past the part's short preview has its entry's line read back from the
// file once (that line alone, found in the bytes the scan noted), for a snippet around the words.
import { open } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { getBranch, readSessionFile, searchSnippetAround, sessionSearchParts, withBodies, type AnyEntry, type SearchSnippet } from "@pi-pruner/core";
import type { SessionStore } from "../store/session-store.ts";
import { documentText } from "../text.ts";
import { entryLineRanges, readEntryLine } from "./entry-line.ts";
import { SessionSearchIndex, type SearchHit } from "./search-index.ts";

/** Entries read back from disk at once: bounds the bodies in memory during a scan. */
const BODY_BATCH_ENTRIES = 64;
/** Bounds of the size of each read of a session file during a scan. */
const MIN_READ_CHUNK_BYTES = 64 * 1024;
const MAX_READ_CHUNK_BYTES = 1024 * 1024;
/** The scan gives the event loop back at least this often. */
const SLICE_MS = 8;
/** Results are refreshed at most this often while a scan runs. */
const RESULTS_EVERY_MS = 400;
/** Hits, best first, whose parts are read back for their snippets: more than a side bar shows at once. */
const SNIPPETS_READ_BACK = 60;

export interface SearchResults {
  query: string;
  hits: SearchHit[];
  /** Sessions indexed, of those listed. */
  indexed: number;
  listed: number;
  /** The scan is still going. */
  scanning: boolean;
}

export class SessionSearch implements vscode.Disposable {
  readonly index = new SessionSearchIndex();
  private query = "";
  private scan: { promise: Promise<void>; cancel: vscode.CancellationTokenSource } | undefined;
  private readonly changed = new vscode.EventEmitter<SearchResults>();
  readonly onDidChange = this.changed.event;
  private latest: SearchResults | undefined;
  private lastShown = 0;
  private readonly disposables: vscode.Disposable[] = [];
  /** Snippets read back for `snippetsFor`, by file and part id. */
  private snippets = new Map<string, SearchSnippet>();
  private snippetsFor = "";
  private readingBack: Promise<void> | undefined;
  /** The scan and the read-back give the event loop back through this. */
  private readonly yieldNow = timeSlices();

  private readonly store: SessionStore;

  constructor(store: SessionStore) {
    this.store = store;
    // A new listing (another agent dir, new sessions): files no longer listed leave the index.
    this.disposables.push(store.onDidChangeList(() => this.index.retain((f) => store.get(f) !== undefined)));
  }

  get results(): SearchResults | undefined {
    return this.latest;
  }

  /** Searches for `query`: results now from what is indexed, more as the scan reads the rest. Resolves when the scan ends and the best hits have their snippets. */
  search(query: string): Promise<void> {
    this.query = query;
    this.publish(true);
    if (!this.scan) {
      const cancel = new vscode.CancellationTokenSource();
      const promise = this.runScan(cancel.token).finally(() => {
        cancel.dispose();
        this.scan = undefined;
        this.publish(true);
      });
      this.scan = { promise, cancel };
    }
    return this.scan.promise.then(() => this.snippetsRead());
  }

  /** Resolves once no snippet is being read back. */
  private async snippetsRead(): Promise<void> {
    while (this.readingBack) await this.readingBack;
  }

  /** Stops a running scan (what was indexed stays). */
  cancel(): void {
    this.scan?.cancel.cancel();
  }

  clear(): void {
    this.query = "";
    this.latest = undefined;
    this.changed.fire({ query: "", hits: [], indexed: this.index.indexedFiles, listed: this.store.sessions().length, scanning: this.scan !== undefined });
  }

  private publish(force: boolean): void {
    const now = performance.now();
    // Until the first hits are shown, every session read may bring them: no wait then.
    const shownHits = this.latest?.query === this.query && this.latest.hits.length > 0;
    if (!force && shownHits && now - this.lastShown < RESULTS_EVERY_MS) return;
    this.lastShown = now;
    if (!this.query.trim()) return;
    if (this.snippetsFor !== this.query) {
      this.snippets = new Map();
      this.snippetsFor = this.query;
    }
    const hits = this.index.search(this.query).map((hit) => {
      const read = hit.pastPreview ? this.snippets.get(snippetKey(hit)) : undefined;
      return read ? { ...hit, snippet: read, pastPreview: false } : hit;
    });
    if (hits.slice(0, SNIPPETS_READ_BACK).some((hit) => hit.pastPreview)) this.readingBack ??= this.readBack(this.query, hits).finally(() => (this.readingBack = undefined));
    this.latest = {
      query: this.query,
      hits,
      indexed: this.store.sessions().filter((s) => this.index.isCurrent(s.file.path, s.file.size, s.file.mtimeMs)).length,
      listed: this.store.sessions().length,
      scanning: this.scan !== undefined,
    };
    this.changed.fire(this.latest);
  }

  /**
   * Reads back the entries of the best hits whose words lie past their preview, a line each, a file
   * at a time, and shows the results again with snippets around the words. A file that changed or
   * went away keeps the preview's snippet.
   */
  private async readBack(query: string, hits: readonly SearchHit[]): Promise<void> {
    const byFile = new Map<string, SearchHit[]>();
    for (const hit of hits.slice(0, SNIPPETS_READ_BACK)) {
      if (!hit.pastPreview || this.snippets.has(snippetKey(hit))) continue;
      const group = byFile.get(hit.file);
      if (group) group.push(hit);
      else byFile.set(hit.file, [hit]);
    }
    for (const [file, fileHits] of byFile) {
      if (this.query !== query) return;
      let handle;
      try {
        handle = await open(file, "r");
        for (const hit of fileHits) {
          if (this.query !== query) return;
          const entry = hit.line && (await readEntryLine(handle, hit.line, hit.entryId, this.yieldNow));
          const text = entry && sessionSearchParts([entry]).find((part) => part.id === hit.partId)?.text;
          this.snippets.set(snippetKey(hit), text === undefined ? hit.snippet : searchSnippetAround(documentText(text), hit.terms));
          await this.yieldNow();
        }
      } catch {
        for (const hit of fileHits) if (!this.snippets.has(snippetKey(hit))) this.snippets.set(snippetKey(hit), hit.snippet);
      } finally {
        await handle?.close();
      }
    }
    if (this.query === query) this.publish(true);
  }

  private runScan(token: vscode.CancellationToken): Promise<void> {
    return Promise.resolve(
      vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: "Pi Pruner: indexing sessions for search", cancellable: true }, async (progress, shown) => {
        const stop = () => token.isCancellationRequested || shown.isCancellationRequested;
        const todo = this.store.sessions().filter((s) => !this.index.isCurrent(s.file.path, s.file.size, s.file.mtimeMs));
        let done = 0;
        const yieldNow = this.yieldNow;
        for (const state of todo) {
          if (stop()) break;
          const { path, size, mtimeMs } = state.file;
          try {
            await this.indexSession(path, size, mtimeMs, state.view?.leafId, yieldNow, stop);
          } catch {
            // A file that went away or changed under the scan: the next search reads it again.
            this.index.remove(path);
          }
          done++;
          progress.report({ message: `${done} of ${todo.length} sessions`, increment: 100 / todo.length });
          this.publish(false);
          await yieldNow();
        }
      }),
    );
  }

  private async indexSession(path: string, size: number, mtimeMs: number, leafId: string | null | undefined, yieldNow: () => Promise<void>, stop: () => boolean): Promise<void> {
    // Reads of a small file's size, not the reader's default megabyte: a scan reads hundreds of files.
    const data = await readSessionFile(path, { lazyBodies: true, chunkBytes: Math.min(MAX_READ_CHUNK_BYTES, Math.max(MIN_READ_CHUNK_BYTES, size + 1)) });
    await yieldNow();
    const branch = getBranch(data, leafId ?? undefined).entries;
    this.index.begin(path, size, mtimeMs);
    const lines = entryLineRanges(data);
    const messages = data.entries.filter((e) => e.type === "message");
    for (let i = 0; i < messages.length; i += BODY_BATCH_ENTRIES) {
      if (stop()) {
        // Half indexed is not indexed: the next scan starts this file over.
        this.index.remove(path);
        return;
      }
      const batch: AnyEntry[] = await withBodies(path, data.elided, messages.slice(i, i + BODY_BATCH_ENTRIES));
      this.index.add(path, sessionSearchParts(batch, { branch, keysFrom: data.entries }), lines);
      await yieldNow();
    }
  }

  dispose(): void {
    this.scan?.cancel.cancel();
    this.changed.dispose();
    for (const d of this.disposables) d.dispose();
    this.index.clear();
  }
}

/** A function to await between pieces of work: it gives the event loop back once a slice has run `SLICE_MS`. */
function timeSlices(): () => Promise<void> {
  let sliceStart = performance.now();
  return async () => {
    if (performance.now() - sliceStart < SLICE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    sliceStart = performance.now();
  };
}

function snippetKey(hit: SearchHit): string {
  return `${hit.file}\0${hit.partId}`;
}
