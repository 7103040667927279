// Values read from a session nest as deep as its writer liked: JSON.parse builds a value a million
// levels deep, but the engine's own recursive walks run out of stack a few thousand levels down
// (on Node 22, JSON.stringify at about 4,100 levels, 2,200 with a replacer; structuredClone at
// 3,300). What measures, hashes or compares such a value goes through `jsonText`, which is exact at
// any depth; what shows one to a person goes through `shownValue`, which cuts it.

type Replacer = (this: unknown, key: string, value: unknown) => unknown;

/**
 * JSON.stringify's text of `value` at any depth: the engine's own, and where that runs out of
 * stack, the same text written by a loop (toJSON, the replacer, omitted members and circular
 * values as JSON.stringify has them).
 */
export function jsonText(value: unknown, replacer?: Replacer): string | undefined {
  try {
    return replacer ? JSON.stringify(value, replacer) : JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return writeJson(value, replacer);
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

/** An object or array being written: its keys (none for an array), the next member, whether one was written. */
interface Frame {
  value: object;
  keys: string[] | undefined;
  next: number;
  wrote: boolean;
}

function prepared(holder: unknown, key: string, value: unknown, replacer: Replacer | undefined): unknown {
  const own = typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function" ? (value as { toJSON: (key: string) => unknown }).toJSON(key) : value;
  return replacer ? replacer.call(holder, key, own) : own;
}

/** Whether JSON.stringify writes the value (it leaves out undefined, functions and symbols). */
function writable(value: unknown): boolean {
  return value === null || ["string", "number", "boolean", "bigint", "object"].includes(typeof value);
}

function writeJson(root: unknown, replacer: Replacer | undefined): string | undefined {
  const parts: string[] = [];
  const stack: Frame[] = [];
  const open = new Set<object>();
  const write = (value: unknown): void => {
    if (value === null) parts.push("null");
    else if (typeof value === "string") parts.push(JSON.stringify(value));
    else if (typeof value === "number") parts.push(Number.isFinite(value) ? String(value) : "null");
    else if (typeof value === "boolean") parts.push(String(value));
    else if (typeof value === "bigint") throw new TypeError("Do not know how to serialize a BigInt");
    else if (typeof value === "object") {
      if (open.has(value)) throw new TypeError("Converting circular structure to JSON");
      open.add(value);
      const isArray = Array.isArray(value);
      parts.push(isArray ? "[" : "{");
      stack.push({ value, keys: isArray ? undefined : Object.keys(value), next: 0, wrote: false });
    }
  };
  const top = prepared({ "": root }, "", root, replacer);
  if (!writable(top)) return undefined;
  write(top);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const length = frame.keys ? frame.keys.length : (frame.value as unknown[]).length;
    if (frame.next >= length) {
      parts.push(frame.keys ? "}" : "]");
      open.delete(frame.value);
      stack.pop();
      continue;
    }
    const index = frame.next++;
    const key = frame.keys ? frame.keys[index]! : String(index);
    const member = prepared(frame.value, key, (frame.value as Record<string, unknown>)[key], replacer);
    if (frame.keys) {
      if (!writable(member)) continue;
      parts.push(`${frame.wrote ? "," : ""}${JSON.stringify(key)}:`);
    } else if (frame.wrote) parts.push(",");
    frame.wrote = true;
    if (writable(member)) write(member);
    else parts.push("null");
  }
  return parts.join("");
}
