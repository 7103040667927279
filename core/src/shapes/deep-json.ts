// Values read from a session nest as deep as its writer liked: JSON.parse builds a value a million
// levels deep, but the engine's own recursive walks run out of stack a few thousand levels down
// (on Node 22, JSON.stringify at about 4,100 levels, 2,200 with a replacer; structuredClone at
// 3,300), and Pi itself refuses to go on with such a session. What measures, hashes or compares a
// value goes through `jsonText`; what shows one to a person goes through `shownValue`. Both cut a
// value only where it nests deeper than SHOWN_DEPTH, and `jsonText` only when the engine cannot
// write it whole.

type Replacer = (this: unknown, key: string, value: unknown) => unknown;

/**
 * JSON.stringify's text of `value`; a value nested too deep for the engine to write is written as
 * shownValue cuts it, and so measured and hashed as its cut copy. (Where the engine's depth ends
 * depends a little on the stack below the call: a value between about 2,200 and 4,100 levels deep
 * may be written whole at one call and cut at another.)
 */
export function jsonText(value: unknown, replacer?: Replacer): string | undefined {
  try {
    return replacer ? JSON.stringify(value, replacer) : JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const cut = cutBelow(value, SHOWN_DEPTH);
    return replacer ? JSON.stringify(cut, replacer) : JSON.stringify(cut);
  }
}

/**
 * How deep a value is shown: far deeper than any tool's arguments go, far shallower than the
 * engine's limits, so the caller's own stack (Pi's, the editor's) keeps its room, and a cut value
 * printed with indentation stays short.
 */
export const SHOWN_DEPTH = 100;

/** What stands for the part of a value below SHOWN_DEPTH. */
export const TOO_DEEP_TO_SHOW = `[nested deeper than ${SHOWN_DEPTH} levels]`;

/** `value` for showing: the value itself when it nests at most SHOWN_DEPTH deep, else a copy with each deeper part replaced by TOO_DEEP_TO_SHOW. */
export function shownValue(value: unknown): unknown {
  return nestsDeeperThan(value, SHOWN_DEPTH) ? cutBelow(value, SHOWN_DEPTH) : value;
}

/** Whether objects and arrays in `value` nest more than `limit` levels (a scalar is 0, `[]` is 1); it looks no deeper than that. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (limit <= 0) return true;
  for (const item of Object.values(value)) if (nestsDeeperThan(item, limit - 1)) return true;
  return false;
}

function cutBelow(value: unknown, levels: number): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (levels <= 0) return TOO_DEEP_TO_SHOW;
  if (Array.isArray(value)) return value.map((item) => cutBelow(item, levels - 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = cutBelow(item, levels - 1);
  return out;
}
