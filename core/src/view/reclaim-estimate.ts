// A session's reclaim estimated from its file in one quick pass, for the editor's Sessions row
// while the session's view model is still being built. Not the render: the raw side is what the
// file's messages hold from Pi's newest compaction on (every branch counted; tool outputs, most of
// a session's bytes, sized from their line rather than parsed), the sent side that minus every
// output a summary, a duplicate, a chain, a spill or a later call made the pruner stub, plus the
// summaries. Protection, rewinds, shrinks and the thinking and error rules are left out, so it can
// differ from the view's figure: a caller shows it as an estimate.
import { type ChainData, type DedupAliasData, type IndexData, PRUNE_CHAIN, PRUNE_DEDUP_ALIAS, PRUNE_INDEX, PRUNE_SUMMARY } from "../shapes/entries.ts";
import { isRecord } from "../shapes/json.ts";
import type { AgentMessage } from "../shapes/messages.ts";
import { contentChars, messageChars } from "../shapes/size.ts";
import { DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES, LineSplitter, scanLines, type LineSink } from "../session/line-scan.ts";
import { fileSessionStorage, type SessionFileStorage } from "../session/session-file-storage.ts";

export interface ReclaimEstimate {
  rawChars: number;
  modelChars: number;
}

/** About what a stub of a pruned output says in its place. */
const STUB_CHARS = 90;
const MESSAGE_LINE = '{"type":"message"';
const CUSTOM_LINE = '{"type":"custom",';
const RESULT_ROLE = '"message":{"role":"toolResult"';
const CALL_ID_FIELD = '"toolCallId":"';
const ID_FIELD = ',"id":"';
const TEXT_FIELD = '"text":"';
/** Index entries matter here only for what a later call or a spill stubbed. */
const INDEX_STUBS = /"supersededBy"|"spillPath"/;

/** What a line the model is sent holds, in file order. */
interface Sent {
  id: string | undefined;
  chars: number;
  /** The output of this call (a tool result). */
  toolCallId?: string;
  /** A pruner summary: sent only with the pruner. */
  summary?: boolean;
}


/** The estimate for the session file at `path`, read a chunk at a time; undefined when it holds no message. */
export async function estimateReclaim(path: string, storage: SessionFileStorage = fileSessionStorage): Promise<ReclaimEstimate | undefined> {
  const tally = new ReclaimTally();
  const splitter = new LineSplitter(tally, DEFAULT_MAX_LINE_BYTES);
  const file = await storage.open(path);
  try {
    await scanLines(file, 0, splitter, { chunkBytes: DEFAULT_CHUNK_BYTES });
  } finally {
    await file.close();
  }
  // A last line without its newline counts too.
  const rest = splitter.takeUnended();
  if (rest) tally.line(rest.bytes, 0, rest.length);
  return tally.estimate();
}

/** What the file's lines send, gathered a line at a time. */
class ReclaimTally implements LineSink {
  private readonly sent: Sent[] = [];
  /** Outputs the pruner stubs, with the size of each one's stub. */
  private readonly stubbed = new Map<string, number>();
  private chainChars = 0;
  private compaction: { at: number; firstKept: string; chars: number } | undefined;

  line(bytes: Buffer | null, start: number, end: number): void {
    if (!bytes) return;
    const text = bytes.toString("utf8", start, end);
    if (text.startsWith(MESSAGE_LINE)) {
      const result = sizedResult(text);
      if (result) {
        this.sent.push(result);
        return;
      }
    } else if (text.startsWith(CUSTOM_LINE) && !isStubbingPayload(text)) return;
    const entry = parseLine(text);
    if (!entry) return;
    const id = typeof entry.id === "string" ? entry.id : undefined;
    switch (entry.type) {
      case "message": {
        const message = entry.message as AgentMessage | undefined;
        if (!isRecord(message) || message.role === "system") break;
        this.sent.push({ id, chars: messageChars(message), toolCallId: message.role === "toolResult" && typeof message.toolCallId === "string" ? message.toolCallId : undefined });
        break;
      }
      case "custom_message":
        this.sent.push({ id, chars: contentChars(entry.content), summary: entry.customType === PRUNE_SUMMARY });
        if (entry.customType === PRUNE_SUMMARY) stubSummarized(entry.details, this.stubbed);
        break;
      case "branch_summary":
        this.sent.push({ id, chars: typeof entry.summary === "string" ? entry.summary.length : 0 });
        break;
      case "compaction":
        this.compaction = { at: this.sent.length, firstKept: String(entry.firstKeptEntryId), chars: typeof entry.summary === "string" ? entry.summary.length : 0 };
        break;
      case "custom":
        this.chainChars += stubPayload(entry.customType, entry.data, this.stubbed);
        break;
    }
  }

  estimate(): ReclaimEstimate | undefined {
    const { sent, compaction, stubbed } = this;
    if (sent.length === 0) return undefined;
    // From Pi's newest compaction on: its summary, the entries it kept, and what came after it.
    let from = 0;
    let rawChars = 0;
    if (compaction) {
      const kept = sent.findIndex((s, i) => i < compaction.at && s.id === compaction.firstKept);
      from = kept >= 0 ? kept : compaction.at;
      rawChars = compaction.chars;
    }
    let modelChars = rawChars + this.chainChars;
    for (let i = from; i < sent.length; i++) {
      const s = sent[i]!;
      if (s.summary) {
        modelChars += s.chars;
        continue;
      }
      rawChars += s.chars;
      const stub = s.toolCallId === undefined ? undefined : stubbed.get(s.toolCallId);
      modelChars += stub === undefined ? s.chars : Math.min(s.chars, stub);
    }
    return { rawChars, modelChars };
  }
}

/**
 * A tool result holding one text, sized from its line: from its text's opening quote to the last
 * `"}]` on the line, each escape counted as the one character it stands for. Anything else is parsed.
 */
function sizedResult(text: string): Sent | undefined {
  const head = text.slice(0, 400);
  if (!head.includes(RESULT_ROLE)) return undefined;
  const idAt = head.indexOf(CALL_ID_FIELD);
  const idEnd = idAt < 0 ? -1 : head.indexOf('"', idAt + CALL_ID_FIELD.length);
  const textAt = head.indexOf(TEXT_FIELD, idEnd);
  if (idEnd < 0 || textAt < 0 || head.indexOf('"type":"', textAt) >= 0) return undefined;
  const from = textAt + TEXT_FIELD.length;
  const to = text.lastIndexOf('"}]');
  if (to < from) return undefined;
  const id = head.startsWith(ID_FIELD, MESSAGE_LINE.length) ? head.slice(MESSAGE_LINE.length + ID_FIELD.length, head.indexOf('"', MESSAGE_LINE.length + ID_FIELD.length)) : undefined;
  return { id, chars: to - from - escapesIn(text, from, to), toolCallId: head.slice(idAt + CALL_ID_FIELD.length, idEnd) };
}

/** Whether a `custom` line is a pruner payload that stubs outputs (the others are not read). */
function isStubbingPayload(text: string): boolean {
  const head = text.slice(0, 120);
  if (head.includes(PRUNE_DEDUP_ALIAS) || head.includes(PRUNE_CHAIN)) return true;
  return head.includes(PRUNE_INDEX) && INDEX_STUBS.test(text);
}

function parseLine(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function escapesIn(text: string, from: number, to: number): number {
  let n = 0;
  for (let at = text.indexOf("\\", from); at >= 0 && at < to; at = text.indexOf("\\", at + 2)) n++;
  return n;
}

function stubSummarized(details: unknown, stubbed: Map<string, number>): void {
  if (!isRecord(details)) return;
  const { toolCallRefs, toolCallIds } = details as { toolCallRefs?: unknown; toolCallIds?: unknown };
  for (const ref of Array.isArray(toolCallRefs) ? toolCallRefs : []) if (isRecord(ref) && typeof ref.toolCallId === "string") stubbed.set(ref.toolCallId, STUB_CHARS);
  for (const id of Array.isArray(toolCallIds) ? toolCallIds : []) if (typeof id === "string") stubbed.set(id, STUB_CHARS);
}

/** Outputs a pruner payload stubs; returns what it sends besides (a chain's range summary). */
function stubPayload(customType: unknown, data: unknown, stubbed: Map<string, number>): number {
  if (!isRecord(data)) return 0;
  if (customType === PRUNE_DEDUP_ALIAS) {
    const alias = data as Partial<DedupAliasData>;
    if (typeof alias.newToolCallId === "string") stubbed.set(alias.newToolCallId, STUB_CHARS);
  } else if (customType === PRUNE_INDEX) {
    const index = data as IndexData;
    for (const record of Array.isArray(index.toolCalls) ? index.toolCalls : []) {
      if (!isRecord(record) || typeof record.toolCallId !== "string") continue;
      if (record.supersededBy) stubbed.set(record.toolCallId, STUB_CHARS);
      else if (typeof record.spillPath === "string") stubbed.set(record.toolCallId, STUB_CHARS + String(record.resultPreview ?? "").length + record.spillPath.length);
    }
  } else if (customType === PRUNE_CHAIN) {
    const chain = data as Partial<ChainData>;
    for (const id of Array.isArray(chain.droppedToolCallIds) ? chain.droppedToolCallIds : []) if (typeof id === "string") stubbed.set(id, 0);
    return typeof chain.rangeSummaryText === "string" ? chain.rangeSummaryText.length : 0;
  }
  return 0;
}
