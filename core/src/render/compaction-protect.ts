// Protection through Pi's compaction. Pi's compaction turns everything before its kept part into
// one summary written by a model, skill files included: the failure protectedPaths exists to
// prevent. So after a compaction, the newest output of every protected call it took out of the
// context is sent again verbatim right after the compaction's summary, one copy per tool and path.
// Nothing is written to the session: the outputs are read from the branch on every render, and
// they depend only on the compaction's ancestors and the protection settings, so the block is the
// same bytes on every request until the next compaction (the prompt cache reads it).
import type { AnyEntry } from "../shapes/entries.ts";
import { isCompactionEntry, isMessageEntry } from "../shapes/entries.ts";
import type { AgentMessage, CustomMessage, ToolCallBlock } from "../shapes/messages.ts";
import { contentText, toolCallsOf } from "../shapes/messages.ts";
import { jsonText } from "../shapes/deep-json.ts";
import { normalizePathForMatch, pathMatcherFor, toolCallPath, type ProtectionConfig } from "../settings/protection.ts";

/** The customType of the message the render inserts (never written to a session). */
export const PROTECTED_RESEND = "context-prune-protected-resend";

/** What a view calls that message. */
export const PROTECTED_RESEND_LABEL = "protected output re-sent after Pi's compaction";

/** One protected call's output, as it is repeated. */
export interface ProtectedOutput {
  /** Tool and path (or tool and arguments, for a protected tool whose call names no path): one copy each. */
  key: string;
  toolName: string;
  /** The call's `path` argument as the call gave it. */
  path?: string;
  toolCallId: string;
  /** The result's timestamp (epoch ms), when it has one. */
  timestamp?: number;
  /** The entry of the result. */
  entryId: string;
  text: string;
}

/** What the render inserts after one compaction's summary. */
export interface CompactionResend {
  compactionId: string;
  /** The compaction summary message's timestamp: how the render finds it among the messages. */
  summaryTimestamp: number;
  outputs: ProtectedOutput[];
  /** Built once, so every request sends the very same message. */
  message: CustomMessage;
}

export interface CompactionResendStats {
  /** Protected outputs repeated after Pi's compaction summary. */
  protectedResent: number;
}

/** isProtected for many calls: the pattern list's one matcher. */
function protectionOf(config: ProtectionConfig): (toolName: string, args: unknown) => boolean {
  const matcher = pathMatcherFor(config.protectedPaths);
  return (toolName, args) => {
    if (config.protectedTools.includes(toolName)) return true;
    const path = toolCallPath(args);
    return path !== undefined && matcher(path) !== undefined;
  };
}

function argumentsKey(args: unknown): string {
  try {
    return jsonText(args) ?? "";
  } catch {
    return "";
  }
}

function outputKey(toolName: string, args: unknown): string {
  const path = toolCallPath(args);
  return `${toolName}\0${path !== undefined ? `path:${normalizePathForMatch(path)}` : `args:${argumentsKey(args)}`}`;
}

interface ProtectedResult {
  key: string;
  toolName: string;
  args: unknown;
  entryId: string;
  toolCallId: string;
  timestamp: number | undefined;
  isError: boolean;
  text: () => string;
}

/**
 * Every protected tool result among `entries`, in order, each with the call it answers: the
 * newest assistant message's call of that id (providers repeat ids across responses).
 */
function protectedResults(entries: readonly AnyEntry[], isProtected: (toolName: string, args: unknown) => boolean, visit: (result: ProtectedResult) => void): void {
  let calls = new Map<string, ToolCallBlock>();
  for (const entry of entries) {
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    // Session files are input: a message entry may hold anything.
    if (!message || typeof message !== "object") continue;
    if (message.role === "assistant") {
      calls = new Map(toolCallsOf(message).map((block) => [block.id, block]));
      continue;
    }
    if (message.role !== "toolResult" || typeof message.toolName !== "string") continue;
    const call = calls.get(message.toolCallId);
    const args: unknown = call?.arguments;
    if (!isProtected(message.toolName, args)) continue;
    visit({
      key: outputKey(message.toolName, args),
      toolName: message.toolName,
      args,
      entryId: entry.id,
      toolCallId: String(message.toolCallId),
      timestamp: typeof message.timestamp === "number" ? message.timestamp : undefined,
      isError: message.isError === true,
      text: () => contentText(message.content),
    });
  }
}

/**
 * The newest output of each protected call among `entries` (root → leaf order), oldest first: one
 * per tool and path, the newest that did not fail and has text. What Pi's compaction would
 * summarize of protected outputs if `entries` are what it cuts away.
 */
export function newestProtectedOutputs(entries: readonly AnyEntry[], config: ProtectionConfig): ProtectedOutput[] {
  const newest = new Map<string, ProtectedOutput>();
  protectedResults(entries, protectionOf(config), (result) => {
    if (result.isError) return;
    const text = result.text();
    if (text === "") return;
    const output: ProtectedOutput = { key: result.key, toolName: result.toolName, toolCallId: result.toolCallId, entryId: result.entryId, text };
    const path = toolCallPath(result.args);
    if (path !== undefined) output.path = path;
    if (result.timestamp !== undefined) output.timestamp = result.timestamp;
    // Deleted first, so the map's order is that of each key's newest output.
    newest.delete(result.key);
    newest.set(result.key, output);
  });
  return [...newest.values()];
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/** The text of the inserted message: one `<protected-output>` per output, as chain blocks carry them. */
function protectedResendText(outputs: readonly ProtectedOutput[]): string {
  const lines = ["<protected-outputs after=\"compaction\">", "The newest output of each protected tool call that the compaction summary above replaced, repeated verbatim:"];
  for (const o of outputs) {
    const path = o.path !== undefined ? ` path="${escapeAttribute(o.path)}"` : "";
    lines.push(`<protected-output tool="${escapeAttribute(o.toolName)}"${path}>${o.text}</protected-output>`);
  }
  lines.push("</protected-outputs>");
  return lines.join("\n");
}

/** Summary messages carry the entry's ISO time as epoch ms, as Pi builds them. */
function summaryTime(entry: AnyEntry): number {
  const time: unknown = entry.timestamp;
  return typeof time === "string" || typeof time === "number" ? new Date(time).getTime() : Number.NaN;
}

/**
 * What to send after the summary of the compaction at `position` on `branch` (root → leaf): the
 * newest protected outputs of the entries before its kept part (earlier compactions' removals
 * included), less those whose tool and path the kept part still carries. Undefined when there is
 * no compaction there or nothing to repeat.
 */
export function compactionResend(branch: readonly AnyEntry[], position: number, config: ProtectionConfig): CompactionResend | undefined {
  const compaction = branch[position];
  if (!compaction || !isCompactionEntry(compaction)) return undefined;
  const first: unknown = compaction.firstKeptEntryId;
  let keptFrom = position;
  for (let i = 0; i < position; i++) {
    if (branch[i]!.id === first) {
      keptFrom = i;
      break;
    }
  }
  const kept = new Set<string>();
  protectedResults(branch.slice(keptFrom, position), protectionOf(config), (result) => kept.add(result.key));
  const outputs = newestProtectedOutputs(branch.slice(0, keptFrom), config).filter((o) => !kept.has(o.key));
  if (!outputs.length) return undefined;
  const summaryTimestamp = summaryTime(compaction);
  const message: CustomMessage = {
    role: "custom",
    customType: PROTECTED_RESEND,
    content: protectedResendText(outputs),
    display: false,
    details: { compactionId: compaction.id, resultEntryIds: outputs.map((o) => o.entryId) },
    timestamp: summaryTimestamp,
  };
  return { compactionId: compaction.id, summaryTimestamp, outputs, message };
}

/** The position of the newest compaction among the first `end` entries of `branch`, or -1. */
export function newestCompactionAt(branch: readonly AnyEntry[], end = branch.length): number {
  for (let i = Math.min(end, branch.length) - 1; i >= 0; i--) if (isCompactionEntry(branch[i]!)) return i;
  return -1;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((v, i) => v === b[i]));
}

/**
 * compactionResend for the requests of one session: the same object back while the compaction and
 * the protection settings stay (the render's memo then reuses its last render), worked out again
 * only when either changes. One per live session or per pass over a branch.
 */
export class CompactionResendReader {
  private last: { compaction: AnyEntry; tools: readonly string[]; paths: readonly string[]; resend: CompactionResend | undefined } | undefined;
  /** How far the previous branch was scanned, its last entry's id, and its newest compaction. */
  private scanned = 0;
  private lastId: string | undefined;
  private compactionAt = -1;

  /** For the newest compaction on the branch; between two requests the branch only grows at its end, and only what is new is looked at. */
  read(branch: readonly AnyEntry[], config: ProtectionConfig): CompactionResend | undefined {
    const grown = this.scanned > 0 && branch.length >= this.scanned && branch[this.scanned - 1]?.id === this.lastId;
    if (!grown) this.compactionAt = -1;
    for (let i = grown ? this.scanned : 0; i < branch.length; i++) if (isCompactionEntry(branch[i]!)) this.compactionAt = i;
    this.scanned = branch.length;
    this.lastId = branch[branch.length - 1]?.id;
    return this.at(branch, this.compactionAt, config);
  }

  /** Forgets everything: another session or branch follows. */
  reset(): void {
    this.last = undefined;
    this.scanned = 0;
    this.lastId = undefined;
    this.compactionAt = -1;
  }

  /** For the compaction at `position` on the branch (-1: none). */
  at(branch: readonly AnyEntry[], position: number, config: ProtectionConfig): CompactionResend | undefined {
    const compaction = position >= 0 ? branch[position] : undefined;
    if (!compaction) return undefined;
    const last = this.last;
    if (last && last.compaction.id === compaction.id && sameList(last.tools, config.protectedTools) && sameList(last.paths, config.protectedPaths)) return last.resend;
    const resend = compactionResend(branch, position, config);
    this.last = { compaction, tools: config.protectedTools.slice(), paths: config.protectedPaths.slice(), resend };
    return resend;
  }
}

/**
 * The render's last step: `resend`'s message right after the compaction summary it belongs to. No
 * such summary among the messages (another compaction, or none) → the messages as they are.
 */
export function insertCompactionResend(messages: AgentMessage[], resend: CompactionResend | undefined, stats: CompactionResendStats): AgentMessage[] {
  if (!resend) return messages;
  // Pi puts the newest compaction's summary first, and sends no other.
  const at = messages.findIndex((m) => m.role === "compactionSummary");
  if (at < 0 || !Object.is(messages[at]!.timestamp, resend.summaryTimestamp)) return messages;
  stats.protectedResent += resend.outputs.length;
  return [...messages.slice(0, at + 1), resend.message, ...messages.slice(at + 1)];
}
