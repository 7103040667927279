// Protection through Pi's compaction. Pi's compaction turns everything before its kept part into
// one summary written by a model, skill files included: the failure protectedPaths exists to
// prevent. So after a compaction, the newest output of every protected call it took out of the
// context is sent again verbatim right after the compaction's summary, one copy per tool and path,
// as Pi last showed it (its `context_edit` replacements and removals applied), the newest first
// within a share of the window; the rest is named for context_tree_query. Nothing is written to
// the session: the outputs are read from the branch on every render, and they depend only on the
// compaction's ancestors, the edits, the protection settings and the bound, so the block is the
// same bytes on every request until the next compaction (the prompt cache reads it).
import type { AnyEntry, ToolCallRecord } from "../shapes/entries.ts";
import { isCompactionEntry, isContextEditEntry, QUERY_TOOL } from "../shapes/entries.ts";
import { editedMessages, entryTime, type ContextMessage } from "../shapes/entry-messages.ts";
import type { AgentMessage, CustomMessage, ToolCallBlock } from "../shapes/messages.ts";
import { contentText, occurrenceKey, toolCallsOf } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";
import { CHARS_PER_TOKEN } from "../shapes/size.ts";
import { escapeAttribute, escapePrunerTags, oneLine } from "../shapes/text.ts";
import { jsonText } from "../shapes/deep-json.ts";
import { normalizePathForMatch, pathMatcherFor, toolCallPath, type ProtectionConfig } from "../settings/protection.ts";
import { DEFAULT_CONFIG } from "../settings/config.ts";
import type { IndexedCall } from "../prune/prune-index.ts";

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
  /** How a note names the call: its path, or else its arguments, on one line. */
  call: string;
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
  /** The outputs the message carries, oldest first. */
  outputs: ProtectedOutput[];
  /** The outputs left out to keep within the bound, newest first: named in the message for context_tree_query. */
  leftOut: ProtectedOutput[];
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
 * Every protected tool result among `messages` (as Pi showed them), in order, each with the call it
 * answers: the newest assistant message's call of that id (providers repeat ids across responses).
 */
function protectedResults(messages: readonly ContextMessage[], isProtected: (toolName: string, args: unknown) => boolean, visit: (result: ProtectedResult) => void): void {
  let calls = new Map<string, ToolCallBlock>();
  for (const { message, entryId } of messages) {
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
      entryId,
      toolCallId: String(message.toolCallId),
      timestamp: typeof message.timestamp === "number" ? message.timestamp : undefined,
      isError: message.isError === true,
      text: () => contentText(message.content),
    });
  }
}

/**
 * The newest output of each protected call among `entries` (root → leaf order) as Pi showed it,
 * the latest edit among `editsFrom` applied, oldest first: one per tool and path, the newest that
 * did not fail and has text. What Pi's compaction would summarize of protected outputs if
 * `entries` are what it cuts away.
 */
export function newestProtectedOutputs(entries: readonly AnyEntry[], config: ProtectionConfig, editsFrom: readonly AnyEntry[] = entries): ProtectedOutput[] {
  const newest = new Map<string, ProtectedOutput>();
  protectedResults(editedMessages(entries, editsFrom), protectionOf(config), (result) => {
    if (result.isError) return;
    const text = result.text();
    if (text === "") return;
    const path = toolCallPath(result.args);
    const call = oneLine(path ?? argumentsKey(result.args), 60);
    const output: ProtectedOutput = { key: result.key, toolName: result.toolName, call, toolCallId: result.toolCallId, entryId: result.entryId, text };
    if (path !== undefined) output.path = path;
    if (result.timestamp !== undefined) output.timestamp = result.timestamp;
    // Deleted first, so the map's order is that of each key's newest output.
    newest.delete(result.key);
    newest.set(result.key, output);
  });
  return [...newest.values()];
}

/** The text of the inserted message: one `<protected-output>` per output, as chain blocks carry them, then `note` if any. */
function protectedResendText(outputs: readonly ProtectedOutput[], note?: string): string {
  const lines = ["<protected-outputs after=\"compaction\">", "The newest output of each protected tool call that the compaction summary above replaced, repeated verbatim:"];
  for (const o of outputs) {
    const path = o.path !== undefined ? ` path="${escapeAttribute(o.path)}"` : "";
    lines.push(`<protected-output tool="${escapeAttribute(o.toolName)}"${path}>${escapePrunerTags(o.text)}</protected-output>`);
  }
  if (note !== undefined) lines.push(note);
  lines.push("</protected-outputs>");
  return lines.join("\n");
}

/** How much of the window the block may take, and how far along the branch the request is. */
export interface ResendOptions {
  /** The most the message may take, in estimated tokens (resendBudget); absent: no bound, the window being unknown. */
  budgetTokens?: number;
  /** The request is built from the branch's first `end` entries (default: all): the edits among them count. */
  end?: number;
}

/** The bound `protectedResendShare` of a `contextWindow`-token window gives: none when the window is not known. */
export function resendBudget(config: { protectedResendShare?: number }, contextWindow: number | undefined): number | undefined {
  if (contextWindow === undefined || !Number.isFinite(contextWindow) || contextWindow <= 0) return undefined;
  return Math.floor((config.protectedResendShare ?? DEFAULT_CONFIG.protectedResendShare) * contextWindow);
}

/**
 * What to send after the summary of the compaction at `position` on `branch` (root → leaf): the
 * newest protected outputs of the entries before its kept part (earlier compactions' removals
 * included), as Pi showed them (the branch's latest edit of each applied: a removed one is gone, a
 * replaced one is sent as replaced), less those whose tool and path the kept part still carries;
 * the newest that fit `budgetTokens`, the rest named. Undefined when there is no compaction there
 * or nothing to repeat.
 */
export function compactionResend(branch: readonly AnyEntry[], position: number, config: ProtectionConfig, options: ResendOptions = {}): CompactionResend | undefined {
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
  // Edits anywhere before the request count, those written after the compaction too: an output a
  // person removed from what the model sees must not come back with the block.
  const editsFrom = branch.slice(0, options.end ?? branch.length);
  const kept = new Set<string>();
  protectedResults(editedMessages(branch.slice(keptFrom, position), editsFrom), protectionOf(config), (result) => kept.add(result.key));
  const candidates = newestProtectedOutputs(branch.slice(0, keptFrom), config, editsFrom).filter((o) => !kept.has(o.key));
  if (!candidates.length) return undefined;
  const { outputs, leftOut, content } = fitWithin(candidates, options.budgetTokens);
  const summaryTimestamp = entryTime(compaction);
  const message: CustomMessage = {
    role: "custom",
    customType: PROTECTED_RESEND,
    content,
    display: false,
    details: { compactionId: compaction.id, resultEntryIds: outputs.map((o) => o.entryId), ...(leftOut.length ? { leftOutEntryIds: leftOut.map((o) => o.entryId) } : {}) },
    timestamp: summaryTimestamp,
  };
  return { compactionId: compaction.id, summaryTimestamp, outputs, leftOut, message };
}

/**
 * The outputs (oldest first) that fit `budgetTokens`, taken newest first, an older one that fits
 * after a newer one that did not included; with anything left out, a note naming it takes at most
 * a quarter of the bound. Without a bound, all of them.
 */
function fitWithin(candidates: readonly ProtectedOutput[], budgetTokens: number | undefined): { outputs: ProtectedOutput[]; leftOut: ProtectedOutput[]; content: string } {
  const whole = protectedResendText(candidates);
  const budgetChars = budgetTokens === undefined ? Infinity : budgetTokens * CHARS_PER_TOKEN;
  if (whole.length <= budgetChars) return { outputs: candidates.slice(), leftOut: [], content: whole };
  const base = protectedResendText([]).length;
  const noteRoom = Math.floor(budgetChars / 4);
  let room = budgetChars - base - noteRoom;
  const taken = new Set<ProtectedOutput>();
  const leftOut: ProtectedOutput[] = [];
  for (let i = candidates.length - 1; i >= 0; i--) {
    const o = candidates[i]!;
    // What the output adds to the message: its line and the line break before it.
    const cost = protectedResendText([o]).length - base;
    if (cost <= room) {
      taken.add(o);
      room -= cost;
    } else leftOut.push(o);
  }
  const outputs = candidates.filter((o) => taken.has(o));
  return { outputs, leftOut, content: protectedResendText(outputs, leftOutNote(leftOut, budgetTokens!, noteRoom - 1)) };
}

/**
 * The note on what was left out, newest first, at most `maxChars` long: how the model gets each
 * back. Each named with its call while they all fit; else the newest so while half the room
 * lasts, the older by tool call id alone, and those past the room counted.
 */
function leftOutNote(leftOut: readonly ProtectedOutput[], budgetTokens: number, maxChars: number): string {
  const count = leftOut.length;
  const intro = `Left out, to keep this message within ${budgetTokens} tokens (contextPrune.protectedResendShare of the context window): ${count} older or larger protected output${count === 1 ? "" : "s"}, newest first. Each is in the session whole: call ${QUERY_TOOL} with its tool call id to read it.`;
  const named = leftOut.map((o) => escapePrunerTags(`- ${o.toolName} ${o.call} (tool call id ${o.toolCallId})`));
  const all = [intro, ...named].join("\n");
  if (all.length <= maxChars) return all;
  const lines = [intro];
  let used = intro.length;
  let next = 0;
  while (next < count && used + 1 + named[next]!.length <= maxChars / 2) {
    lines.push(named[next]!);
    used += 1 + named[next]!.length;
    next++;
  }
  const ids: string[] = [];
  let idsUsed = used + 1 + OLDER_BY_ID.length;
  for (; next < count; next++) {
    const id = escapePrunerTags(leftOut[next]!.toolCallId);
    const rest = count - next - 1;
    // Room stays for the line that counts what is not listed.
    const grown = idsUsed + (ids.length ? 2 : 0) + id.length;
    if (grown + (rest > 0 ? 1 + notListedLine(rest).length : 0) > maxChars) break;
    ids.push(id);
    idsUsed = grown;
  }
  if (ids.length) lines.push(OLDER_BY_ID + ids.join(", "));
  if (next < count) lines.push(notListedLine(count - next));
  return lines.join("\n");
}

const OLDER_BY_ID = "- older ones, by tool call id: ";

function notListedLine(count: number): string {
  return `- and ${count} older, not listed here`;
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
 * compactionResend for the requests of one session: the same object back while the compaction,
 * the edits after it, the protection settings and the bound stay (the render's memo then reuses
 * its last render), worked out again only when one changes. One per live session or per pass
 * over a branch.
 */
export class CompactionResendReader {
  private last: { compaction: AnyEntry; edits: string; tools: readonly string[]; paths: readonly string[]; budget: number | undefined; resend: CompactionResend | undefined } | undefined;
  /** How far the previous branch was scanned, its last entry's id, and its newest compaction. */
  private scanned = 0;
  private lastId: string | undefined;
  private compactionAt = -1;
  /** The context edits after the compaction among the entries counted (how many, and the newest), and where the count stopped. */
  private counted: { compactionId: string; end: number; lastId: string | undefined; edits: number; newestEdit: string | undefined } | undefined;

  /** For the newest compaction on the branch; between two requests the branch only grows at its end, and only what is new is looked at. */
  read(branch: readonly AnyEntry[], config: ProtectionConfig, budgetTokens?: number): CompactionResend | undefined {
    const grown = this.scanned > 0 && branch.length >= this.scanned && branch[this.scanned - 1]?.id === this.lastId;
    if (!grown) this.compactionAt = -1;
    for (let i = grown ? this.scanned : 0; i < branch.length; i++) if (isCompactionEntry(branch[i]!)) this.compactionAt = i;
    this.scanned = branch.length;
    this.lastId = branch[branch.length - 1]?.id;
    return this.at(branch, this.compactionAt, config, { budgetTokens });
  }

  /** Forgets everything: another session or branch follows. */
  reset(): void {
    this.last = undefined;
    this.scanned = 0;
    this.lastId = undefined;
    this.compactionAt = -1;
    this.counted = undefined;
  }

  /** For the compaction at `position` on the branch (-1: none). */
  at(branch: readonly AnyEntry[], position: number, config: ProtectionConfig, options: ResendOptions = {}): CompactionResend | undefined {
    const compaction = position >= 0 ? branch[position] : undefined;
    if (!compaction) return undefined;
    const end = Math.min(options.end ?? branch.length, branch.length);
    const edits = this.editsAfter(branch, position, end);
    const last = this.last;
    const budget = options.budgetTokens;
    if (last && last.compaction.id === compaction.id && last.edits === edits && last.budget === budget && sameList(last.tools, config.protectedTools) && sameList(last.paths, config.protectedPaths)) return last.resend;
    const resend = compactionResend(branch, position, config, { budgetTokens: budget, end });
    this.last = { compaction, edits, tools: config.protectedTools.slice(), paths: config.protectedPaths.slice(), budget, resend };
    return resend;
  }

  /**
   * The context edits between the compaction at `position` and `end`, as their count and newest id
   * (two branches that agree on both hold the same edits); the entries counted before are not
   * counted again.
   */
  private editsAfter(branch: readonly AnyEntry[], position: number, end: number): string {
    const before = this.counted;
    const compactionId = branch[position]!.id;
    // The branch only grows at its end between two requests: the same entry where the count stopped means the same entries before it.
    const carry = before && before.compactionId === compactionId && before.end <= end && branch[before.end - 1]?.id === before.lastId;
    let edits = carry ? before.edits : 0;
    let newestEdit = carry ? before.newestEdit : undefined;
    for (let i = carry ? before.end : position + 1; i < end; i++) {
      const entry = branch[i]!;
      if (!isContextEditEntry(entry)) continue;
      edits++;
      newestEdit = entry.id;
    }
    this.counted = { compactionId, end, lastId: branch[end - 1]?.id, edits, newestEdit };
    return `${edits}:${newestEdit ?? ""}`;
  }
}

/**
 * Every protected output on `branch` of tool call id `toolCallId` (providers repeat ids, so maybe
 * several), as Pi last showed it: the latest edit of each applied, a removed one absent. What the
 * note on left-out outputs sends the model to context_tree_query for: protected calls are never
 * indexed, so the query finds them here. The shortRef is the id itself.
 */
export function protectedOutputsById(branch: readonly AnyEntry[], toolCallId: string, config: ProtectionConfig): IndexedCall[] {
  const found: IndexedCall[] = [];
  protectedResults(editedMessages(branch, branch), protectionOf(config), (result) => {
    if (result.toolCallId !== toolCallId) return;
    const record: ToolCallRecord = { toolCallId, toolName: result.toolName, resultText: result.text(), isError: result.isError };
    if (isRecord(result.args)) record.args = result.args;
    if (result.timestamp !== undefined) record.resultTimestamp = result.timestamp;
    found.push({ record, key: occurrenceKey(toolCallId, result.timestamp), shortRef: toolCallId });
  });
  return found;
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
