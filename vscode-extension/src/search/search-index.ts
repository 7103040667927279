// The full-text index over the listed sessions, made with MiniSearch. It keeps the index and, per
// hit, only where the hit leads and a short preview: bodies are indexed and let go, never kept.
import MiniSearch from "minisearch";
import { searchSnippetAround, type SearchPart, type SearchPartKind, type SearchSnippet } from "@pi-pruner/core";
import { documentText } from "../text.ts";
import type { ByteRange } from "./entry-line.ts";

/** What a hit remembers: where it leads, not the text it matched. */
export interface SearchHitTarget {
  file: string;
  kind: SearchPartKind;
  entryId: string;
  /** The part's id in the session (its text is read back by it when the match lies past the preview). */
  partId: string;
  toolName?: string;
  callKey?: string;
  request?: number | "next";
  timestamp?: number;
  /** The part's beginning, on one line: enough to recognise it in a result list. */
  preview: string;
  /** For a part longer than its preview: the bytes of the file its entry's line lies in, to read it back by. */
  line?: ByteRange;
}

export interface SearchHit extends SearchHitTarget {
  score: number;
  /** The words the hit matched, as the index and the query hold them. */
  terms: string[];
  /** The line around the matched words, with them marked; from the preview until the part is read back. */
  snippet: SearchSnippet;
  /** The matched words lie past the preview (in a part that has a `line`): the snippet shows the part's beginning until it is read back. */
  pastPreview: boolean;
}

/** Characters of each part kept for its preview. */
const PREVIEW_CHARS = 400;

/** Longer words are not words a person types (base64, minified code, hashes): left out, they keep the index small. */
const MAX_TERM_CHARS = 48;

function indexTerm(term: string): string | null {
  return term.length > MAX_TERM_CHARS ? null : term.toLowerCase();
}

interface IndexedFile {
  size: number;
  mtimeMs: number;
  ids: number[];
}

export class SessionSearchIndex {
  private readonly index = new MiniSearch<{ id: number; text: string }>({ fields: ["text"], idField: "id", processTerm: indexTerm });
  private readonly targets = new Map<number, SearchHitTarget>();
  private readonly files = new Map<string, IndexedFile>();
  private nextId = 1;

  /** Whether `file` is indexed as it is now (same size and modification time). */
  isCurrent(file: string, size: number, mtimeMs: number): boolean {
    const known = this.files.get(file);
    return known !== undefined && known.size === size && known.mtimeMs === mtimeMs;
  }

  /** Forgets what was indexed of `file` (before it is indexed again, or when it is no longer listed). */
  remove(file: string): void {
    const known = this.files.get(file);
    if (!known) return;
    for (const id of known.ids) {
      this.index.discard(id);
      this.targets.delete(id);
    }
    this.files.delete(file);
  }

  /** Keeps only the files `listed` still names. */
  retain(listed: (file: string) => boolean): void {
    for (const file of [...this.files.keys()]) if (!listed(file)) this.remove(file);
  }

  /** Starts indexing `file` afresh; `add` then takes its parts in batches. */
  begin(file: string, size: number, mtimeMs: number): void {
    this.remove(file);
    this.files.set(file, { size, mtimeMs, ids: [] });
  }

  /** Adds parts of `file`; `lines` tells where each entry's line lies (see `SearchHitTarget.line`). */
  add(file: string, parts: readonly SearchPart[], lines?: ReadonlyMap<string, ByteRange>): void {
    const known = this.files.get(file);
    if (!known) throw new Error(`begin(${file}) first`);
    const docs = parts.map((part) => {
      const id = this.nextId++;
      known.ids.push(id);
      this.targets.set(id, {
        file,
        kind: part.kind,
        entryId: part.entryId,
        partId: part.id,
        ...(part.toolName !== undefined ? { toolName: part.toolName } : {}),
        ...(part.callKey !== undefined ? { callKey: part.callKey } : {}),
        ...(part.request !== undefined ? { request: part.request } : {}),
        ...(part.timestamp !== undefined ? { timestamp: part.timestamp } : {}),
        ...(part.text.length > PREVIEW_CHARS && lines?.has(part.entryId) ? { line: lines.get(part.entryId)! } : {}),
        // A copy, so the preview does not hold the whole body alive through a sliced string.
        preview: Buffer.from(part.text.slice(0, PREVIEW_CHARS), "utf8").toString("utf8"),
      });
      return { id, text: part.text };
    });
    this.index.addAll(docs);
  }

  get indexedFiles(): number {
    return this.files.size;
  }

  get indexedParts(): number {
    return this.targets.size;
  }

  /** Hits for `query`, best first: every word must match (the last one as a prefix), a little fuzzy. */
  search(query: string, limit = 200): SearchHit[] {
    const trimmed = query.trim();
    if (!trimmed) return [];
    const results = this.index.search(trimmed, { prefix: (term, i, terms) => i === terms.length - 1, fuzzy: (term) => (term.length > 5 ? 0.15 : false), combineWith: "AND" });
    const hits: SearchHit[] = [];
    for (const result of results) {
      const target = this.targets.get(result.id as number);
      if (!target) continue;
      const terms = [...new Set([...result.terms, ...result.queryTerms])];
      // Session text is untrusted: escapes and controls go before the line is cut and marked.
      const snippet = searchSnippetAround(documentText(target.preview), terms);
      hits.push({ ...target, score: result.score, terms, snippet, pastPreview: snippet.highlights.length === 0 && target.line !== undefined });
      if (hits.length >= limit) break;
    }
    return hits;
  }

  clear(): void {
    this.index.removeAll();
    this.targets.clear();
    this.files.clear();
  }
}
