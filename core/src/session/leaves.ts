// The leaves of a session file: where its branches end. Pi resumes from the last entry in file
// order, which is always one of them; the others are branches the person left (/tree, a fork).
import type { SessionData } from "./session-reader.ts";

/** Entries no other entry continues, in file order (the newest last). */
export function sessionLeaves(data: Pick<SessionData, "entries">): string[] {
  const parents = new Set<string>();
  for (const entry of data.entries) if (entry.parentId) parents.add(entry.parentId);
  return data.entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
}
