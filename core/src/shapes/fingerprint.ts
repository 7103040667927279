// One message told from another without serialising it. Pi hands the pruner a fresh deep copy of
// the context on every request, so a message cannot be found again by identity: what survives a
// copy is compared instead. Three places do that on every request: the render's memory of the
// previous request and the status line's sizes, which compare the message at each position with
// the one there last time, and the cache meter, which looks its converted messages up by it (with
// the ends of their texts added, as a key that no position narrows down).
import type { AgentMessage } from "./messages.ts";

/** The fields a fingerprint reads; every message shape has some of them, and they are only read. */
interface FingerprintFields {
  role: string;
  timestamp?: unknown;
  toolCallId?: unknown;
  content?: unknown;
  /** A user shell command's output, which a stub replaces (it has no content). */
  output?: unknown;
  excludeFromContext?: unknown;
}

/**
 * A message's content shape in one number: a string's length, or the block count with the first
 * block's text and thinking lengths (a stub from its output, one turn from another).
 */
function contentShape(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return -1;
  const first: unknown = content[0];
  const text = typeof first === "object" && first !== null && "text" in first && typeof first.text === "string" ? first.text.length : 0;
  const thinking = typeof first === "object" && first !== null && "thinking" in first && typeof first.thinking === "string" ? first.thinking.length : 0;
  return -2 - content.length * 1_000_003 - text - thinking;
}

/** A user shell command's shape: its output's length, and whether it is sent at all. */
function shellShape(m: FingerprintFields): number {
  const length = typeof m.output === "string" ? m.output.length : -1;
  return m.excludeFromContext === true ? -3 - length : length;
}

// Two 32-bit hashes (FNV-1a and a Murmur-style mix) of the same values: 53 bits together.
const mixA = (a: number, n: number): number => Math.imul(a ^ n, 0x01000193);
const mixB = (b: number, n: number): number => Math.imul(b ^ n, 0x5bd1e995) ^ (b >>> 15);

/** A text's FNV-1a hash, starting from its length. */
function textHash(text: string): number {
  let h = mixA(0x811c9dc5, text.length);
  for (let i = 0; i < text.length; i++) h = mixA(h, text.charCodeAt(i));
  return h;
}

/**
 * A message as one number: its role, timestamp, tool-call id and content shape (a user shell
 * command's: its output's length), hashed to 53 bits.
 * The same for a message and any copy of it; two messages that differ in any of these differ here
 * but by a hash collision. It reads none of the content's text (a message is compared with the one
 * at its position last time; the cache meter adds the ends of the texts), so it costs little more
 * than reading those four fields.
 */
export function messageFingerprint(message: AgentMessage): number {
  const m: FingerprintFields = message;
  const timestamp = m.timestamp;
  // Epoch milliseconds exceed 32 bits: a timestamp goes in as two halves; anything else by its text.
  const exact = typeof timestamp === "number" && Number.isSafeInteger(timestamp);
  const role = textHash(String(m.role));
  const low = exact ? timestamp % 0x100000000 : textHash(`${typeof timestamp}:${String(timestamp)}`);
  const high = exact ? Math.floor(timestamp / 0x100000000) : -1;
  const id = typeof m.toolCallId === "string" ? textHash(m.toolCallId) : -1;
  const shape = m.role === "bashExecution" ? shellShape(m) : contentShape(m.content);
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  a = mixA(mixA(mixA(mixA(mixA(a, role), low), high), id), shape);
  b = mixB(mixB(mixB(mixB(mixB(b, role), low), high), id), shape);
  return (a >>> 0) * 0x200000 + (b >>> 11);
}
