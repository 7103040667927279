// Which extension wrote a session's pruning and self-control entries, recognised from the entries
// themselves, and what that means for a view we render: pi-pruner, pi-condense 2.x and pi-mulligan
// write the same entry shapes (that is the compatibility contract), so a view of another writer's
// session is rendered with pi-pruner's own stub and chain wording. The header says so, and gives the
// counts that must match what that writer sent.
//
// Only entries that are not plain messages are read (custom entries, custom messages, labels, and
// the assistant turn a marker was written for): an appended message never changes the answer.
import type { AnyEntry, CustomEntry, CustomMessageEntry } from "../shapes/entries.ts";
import { isCustomEntry, isCustomMessageEntry, isLabelEntry, isMessageEntry, PRUNE_CHAIN, PRUNE_DEDUP_ALIAS, PRUNE_FRONTIER, PRUNE_INDEX, PRUNE_SETTINGS, PRUNE_STATS, PRUNE_SUMMARY } from "../shapes/entries.ts";
import { contentText, toolCallsOf } from "../shapes/messages.ts";
import { isRecord } from "../shapes/json.ts";
import { readChainData, readFrontierData, readIndexData, readSettingsData } from "../shapes/read-payloads.ts";
import { stripFooter } from "../prune/summarizer-prompts.ts";
import { CANCEL_ENTRY, CHECKPOINT_PREFIX, NOTE_MESSAGE, REWIND_ENTRY, SHRINK_ENTRY, TURN_METRIC_ENTRY } from "../control/control-entries.ts";
import type { RenderStats } from "../render/render.ts";
import type { ControlsView } from "./control-view.ts";

type WriterName = "pi-pruner" | "pi-condense" | "pi-mulligan";

/** Entry types only pi-condense writes: one per flush attempt, and its render's degradations. */
export const CONDENSE_FLUSH_METRICS = "context-prune-flush-metrics";
export const CONDENSE_DIAGNOSTIC = "context-prune-diagnostic";

/** The self-control tools pi-pruner registers; pi-mulligan's are named `mulligan_*`. */
const OUR_CONTROL_TOOLS = new Set(["context_rewind", "context_shrink", "context_cancel"]);
/** The chain bodies pi-pruner writes; pi-condense writes "deterministic" or none. */
const OUR_BODY_SOURCES = new Set(["range-summary", "batch-summaries", "call-list"]);
/** pi-condense's summary footer starts with this line. */
const CONDENSE_FOOTER = "**Summarized tool refs**";

const PRUNER_TYPES = new Set([PRUNE_SUMMARY, PRUNE_INDEX, PRUNE_DEDUP_ALIAS, PRUNE_CHAIN, PRUNE_FRONTIER, PRUNE_STATS]);
const CONTROL_TYPES = new Set([REWIND_ENTRY, SHRINK_ENTRY, CANCEL_ENTRY, TURN_METRIC_ENTRY, NOTE_MESSAGE]);

const LABELS: Record<WriterName, string> = { "pi-pruner": "pi-pruner", "pi-condense": "pi-condense 2.x", "pi-mulligan": "pi-mulligan" };

interface WriterFinding {
  name: WriterName;
  /** "pi-condense 2.x", "pi-pruner 0.1.0" (the version its settings entry records), "pi-mulligan". */
  label: string;
  /** What on the branch says so, one short phrase each. */
  signs: string[];
}

/** Entries in a shape two writers share that nothing on the branch ties to either. */
interface UnattributedEntries {
  shape: "context-prune" | "mulligan";
  count: number;
  /** Who may have written them. */
  candidates: WriterName[];
}

export interface SessionWriter {
  /** The writers recognised, in the order their first sign appears on the branch. Empty: Pi alone. */
  writers: WriterFinding[];
  unattributed: UnattributedEntries[];
  /** One line: "pi-condense 2.x", "pi-condense 2.x and pi-mulligan", "Pi alone (no pruner or self-control entries)". */
  label: string;
  /** Another writer's entries (or entries no sign ties to pi-pruner) shape what the views render. */
  foreign: boolean;
  /** The branch holds Pi 1.6's system-prompt entry. */
  piSystemEntry: boolean;
}

interface Tally {
  signs: Map<WriterName, { first: number; signs: string[] }>;
  pruner: number;
  control: number;
  version?: string;
}

function sign(tally: Tally, writer: WriterName, position: number, text: string): void {
  const found = tally.signs.get(writer);
  if (!found) tally.signs.set(writer, { first: position, signs: [text] });
  else if (!found.signs.includes(text)) found.signs.push(text);
}

/** The tool names of the assistant turn nearest before `position` (the turn a marker was written for). */
function turnToolNames(branch: readonly AnyEntry[], position: number): string[] {
  for (let i = position - 1; i >= 0 && i >= position - 8; i--) {
    const entry = branch[i]!;
    if (!isMessageEntry(entry)) continue;
    const message = entry.message;
    if (message?.role === "assistant") return toolCallsOf(message).map((c) => String(c.name));
    if (message?.role === "user") return [];
  }
  return [];
}

function controlToolSign(tally: Tally, names: readonly string[], position: number): void {
  if (names.some((n) => n.startsWith("mulligan_"))) sign(tally, "pi-mulligan", position, "markers written by its mulligan_* tools");
  if (names.some((n) => OUR_CONTROL_TOOLS.has(n))) sign(tally, "pi-pruner", position, "markers written by its context_* tools");
}

/** Recognises the writers of a branch's entries (root → leaf). */
export function detectSessionWriter(branch: readonly AnyEntry[]): SessionWriter {
  const tally: Tally = { signs: new Map(), pruner: 0, control: 0 };
  const markerEntryIds = new Set<string>();
  const rewindIds = new Set<string>();
  let piSystemEntry = false;
  branch.forEach((entry, position) => {
    if (isMessageEntry(entry)) {
      if (entry.message?.role === "system") piSystemEntry = true;
      return;
    }
    if (isLabelEntry(entry)) {
      const label: unknown = entry.label;
      if (typeof label === "string" && label.startsWith(CHECKPOINT_PREFIX)) tally.control++;
      return;
    }
    if (!isCustomEntry(entry) && !isCustomMessageEntry(entry)) return;
    const customType: unknown = entry.customType;
    if (typeof customType !== "string") return;
    const data = isCustomEntry(entry) ? entry.data : undefined;
    if (customType === PRUNE_SETTINGS) {
      const settings = readSettingsData(data);
      tally.version ??= typeof settings === "string" ? undefined : settings.version;
      sign(tally, "pi-pruner", position, "its settings entry");
      return;
    }
    if (customType === CONDENSE_FLUSH_METRICS) return sign(tally, "pi-condense", position, "its flush-metrics entries");
    if (customType === CONDENSE_DIAGNOSTIC) return sign(tally, "pi-condense", position, "its diagnostic entries");
    if (PRUNER_TYPES.has(customType)) {
      tally.pruner++;
      prunerSigns(tally, customType, entry, position);
      return;
    }
    if (CONTROL_TYPES.has(customType)) {
      tally.control++;
      if (customType === NOTE_MESSAGE) {
        // pi-mulligan's note names its rewind by the marker's entry id, pi-pruner's by the marker's id.
        const details = isCustomMessageEntry(entry) ? entry.details : undefined;
        const rewindId = isRecord(details) ? details.rewindId : undefined;
        if (typeof rewindId === "string" && markerEntryIds.has(rewindId)) sign(tally, "pi-mulligan", position, "a note naming its rewind's entry");
        else if (typeof rewindId === "string" && rewindIds.has(rewindId)) sign(tally, "pi-pruner", position, "a note naming its rewind's id");
        return;
      }
      if (customType === TURN_METRIC_ENTRY) return;
      markerEntryIds.add(entry.id);
      if (isRecord(data) && typeof data.id === "string") rewindIds.add(data.id);
      // pi-pruner's cancels always say why; pi-mulligan's never do.
      if (customType === CANCEL_ENTRY && isRecord(data) && typeof data.reason === "string") sign(tally, "pi-pruner", position, "cancels that give a reason");
      controlToolSign(tally, turnToolNames(branch, position), position);
    }
  });
  return summarise(tally, piSystemEntry);
}

function prunerSigns(tally: Tally, customType: string, entry: CustomEntry | CustomMessageEntry, position: number): void {
  if (isCustomMessageEntry(entry)) {
    if (customType !== PRUNE_SUMMARY) return;
    const text = contentText(entry.content);
    if (text.includes(CONDENSE_FOOTER)) sign(tally, "pi-condense", position, "its summary footer");
    else if (stripFooter(text) !== text) sign(tally, "pi-pruner", position, "its summary footer");
  } else if (customType === PRUNE_CHAIN) {
    const chain = readChainData(entry.data);
    if (typeof chain === "string") return;
    if (chain.bodySource !== undefined && OUR_BODY_SOURCES.has(chain.bodySource)) sign(tally, "pi-pruner", position, `chain bodies of its kinds (${chain.bodySource})`);
    else if (chain.bodySource === "deterministic") sign(tally, "pi-condense", position, "a deterministic chain body");
    else if (chain.bodySource === undefined) sign(tally, "pi-condense", position, "chains without a bodySource");
  } else if (customType === PRUNE_INDEX) {
    const index = readIndexData(entry.data);
    if (typeof index !== "string" && index.backfilled === true) sign(tally, "pi-condense", position, "a backfilled index entry");
  } else if (customType === PRUNE_FRONTIER) {
    const frontier = readFrontierData(entry.data);
    if (typeof frontier !== "string" && frontier.keepsEpoch === true) sign(tally, "pi-pruner", position, "a frontier that keeps its epoch");
  }
}

function summarise(tally: Tally, piSystemEntry: boolean): SessionWriter {
  const writers: WriterFinding[] = [...tally.signs]
    .sort((a, b) => a[1].first - b[1].first)
    .map(([name, found]) => ({ name, label: name === "pi-pruner" && tally.version ? `pi-pruner ${tally.version}` : LABELS[name], signs: found.signs }));
  const has = (name: WriterName) => tally.signs.has(name);
  const unattributed: UnattributedEntries[] = [];
  // Shared shapes without a sign of their own. A sign of pi-pruner on the other half of the work
  // vouches for them (it writes both halves); markers beside pi-condense's entries are pi-mulligan's
  // (pi-condense writes none). Anything else stays open.
  if (tally.pruner > 0 && !has("pi-condense") && !has("pi-pruner")) {
    unattributed.push({ shape: "context-prune", count: tally.pruner, candidates: ["pi-pruner", "pi-condense"] });
  }
  if (tally.control > 0 && !has("pi-mulligan") && !has("pi-pruner")) {
    if (has("pi-condense")) writers.push({ name: "pi-mulligan", label: LABELS["pi-mulligan"], signs: ["markers beside pi-condense's entries (pi-condense writes none)"] });
    else unattributed.push({ shape: "mulligan", count: tally.control, candidates: ["pi-pruner", "pi-mulligan"] });
  }
  const foreign = writers.some((w) => w.name !== "pi-pruner") || unattributed.length > 0;
  return { writers, unattributed, label: writerLabel(writers, unattributed), foreign, piSystemEntry };
}

function writerLabel(writers: readonly WriterFinding[], unattributed: readonly UnattributedEntries[]): string {
  const parts = writers.map((w) => w.label);
  for (const u of unattributed) parts.push(`${u.candidates.map((c) => LABELS[c]).join(" or ")} (their shared ${u.shape} entries; nothing on the branch tells which)`);
  if (parts.length === 0) return "Pi alone (no pruner or self-control entries)";
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

// ---- what the render shows of it ----

export interface RenderedCounts {
  /** Tool results sent as a stub. */
  resultsStubbed: number;
  /** Chains sent as one `<compressed-chain>` block. */
  chainsCompressed: number;
  /** Rewound spans left out. */
  spansHidden: number;
  /** Messages sent as a shrink's replacement. */
  messagesShrunk: number;
}

export interface RenderFidelity {
  /** The rendered text is what was sent: pi-pruner wrote the entries, or there is nothing to render. */
  exact: boolean;
  /** The statement a header shows, one sentence a line (empty when exact). */
  lines: string[];
  counts: RenderedCounts;
}

export function renderedCounts(model: { stats?: Pick<RenderStats, "stubbed" | "chainsCompressed" | "shrunkMessages">; controls: Pick<ControlsView, "rewoundSpans"> }): RenderedCounts {
  return {
    resultsStubbed: model.stats?.stubbed ?? 0,
    chainsCompressed: model.stats?.chainsCompressed ?? 0,
    spansHidden: model.controls.rewoundSpans.length,
    messagesShrunk: model.stats?.shrunkMessages ?? 0,
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * pi-mulligan's rewinds and shrinks did nothing where it ran on Pi 1.6: its context filter maps
 * entries to messages by position, and Pi 1.6's system-prompt entry shifts them, so it gives up.
 * The requests such a session sent hid no span and shrank no message.
 */
export const INERT_MARKERS = "pi-mulligan's context filter did nothing on Pi 1.6, where this session was written";

export function markersWereInert(writer: SessionWriter): boolean {
  return writer.piSystemEntry && writer.writers.some((w) => w.name === "pi-mulligan") && !writer.writers.some((w) => w.name === "pi-pruner");
}

/**
 * What a view rendered from `writer`'s entries tells a person about its text, with the counts that
 * must match. `shown` is which request the view is: one already sent, or the next (the leaf's).
 */
export function renderFidelity(writer: SessionWriter, counts: RenderedCounts, shown: "sent" | "next" = "next"): RenderFidelity {
  if (!writer.foreign) return { exact: true, lines: [], counts };
  const names = writer.writers.filter((w) => w.name !== "pi-pruner");
  const condense = names.some((w) => w.name === "pi-condense") || writer.unattributed.some((u) => u.shape === "context-prune");
  const mulligan = names.some((w) => w.name === "pi-mulligan") || writer.unattributed.some((u) => u.shape === "mulligan");
  const lines: string[] = [];
  const pruning = `${plural(counts.resultsStubbed, "result")} stubbed, ${plural(counts.chainsCompressed, "chain")} compressed`;
  const control = `${plural(counts.spansHidden, "span")} hidden, ${plural(counts.messagesShrunk, "message")} shrunk`;
  if (condense) {
    lines.push(
      "Rendered with pi-pruner's own stub and chain wording, not the writer's: the words of stubs and chain blocks differ from what was sent.",
      `These counts must match what was sent: ${pruning}.`,
    );
  }
  if (markersWereInert(writer)) {
    lines.push(
      "pi-mulligan's context filter changed nothing on Pi 1.6 (it maps entries to messages by position, and the system-prompt entry shifts them): what was sent hid no span and shrank no message.",
      shown === "sent"
        ? `Shown as it was sent, the markers not applied: ${control}.`
        : `The next request is shown as pi-pruner would send it, applying the markers: ${control}.`,
    );
  } else if (mulligan) {
    lines.push("Rewinds and shrinks are applied as pi-pruner applies them; notes and replacements are the writer's own text.", `These counts must match what was sent: ${control}.`);
  }
  return { exact: false, lines, counts };
}

/** The header lines a text view starts with: who wrote the session and, for another writer, what the render means. */
export function writerHeaderLines(writer: SessionWriter, fidelity: RenderFidelity): string[] {
  const lines = [`Written by: ${writer.label}${writer.writers.length ? ` (recognised from ${writer.writers.flatMap((w) => w.signs.slice(0, 2)).join("; ")})` : ""}`];
  return [...lines, ...fidelity.lines];
}

/** A chain entry in one of the shapes only pi-pruner writes (its body sources). */
export function chainWrittenByPiPruner(chain: { bodySource?: unknown }): boolean {
  return typeof chain.bodySource === "string" && OUR_BODY_SOURCES.has(chain.bodySource);
}
