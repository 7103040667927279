// Which sessions keep their parsed data: those the UI shows expanded or selected, and the few used
// most recently besides. The others drop it (their totals stay), so a long list of large sessions
// does not pile up in memory.

/** Sessions whose parsed data is kept besides those in use. */
const KEEP_PARSED = 4;

export class ParsedSessions {
  private readonly inUse = new Set<string>();
  /** Most recently used first. */
  private recent: string[] = [];

  /** Sessions the UI shows expanded or selected keep their parsed data. */
  setInUse(path: string, used: boolean): void {
    if (used) this.inUse.add(path);
    else this.inUse.delete(path);
  }

  /** Marks `path` as just used; returns the sessions, among the parsed ones, whose parsed data should go. */
  touch(path: string, isParsed: (path: string) => boolean): string[] {
    this.recent = [path, ...this.recent.filter((p) => p !== path)];
    const drop: string[] = [];
    let kept = 0;
    for (const p of this.recent) {
      if (!isParsed(p) || this.inUse.has(p)) continue;
      if (kept < KEEP_PARSED) kept++;
      else drop.push(p);
    }
    return drop;
  }

  /** Forgets the use of sessions that are no longer listed. */
  retain(listed: (path: string) => boolean): void {
    this.recent = this.recent.filter(listed);
  }

  /** A new scope: no session of it was used yet. */
  clear(): void {
    this.recent = [];
  }
}
