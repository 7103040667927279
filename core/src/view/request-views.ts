// The model view of any request already sent along a branch. Each assistant message on the branch
// answered one model request (numbered from 1); what that request sent is Pi's context built from
// the entries before the answer, rendered with the pruner's entries that existed then (the index
// and the self-control markers rebuilt from them) and the settings in force then (see
// recorded-settings.ts). The leaf's view (model-view.ts) is the next request, not sent yet.
//
// Nudges that rode a request (the drift and high-water notes) are never written to the session,
// so no view of it can show them.
import type { AnyEntry } from "../shapes/entries.ts";
import { ControlsReader } from "../control/read-controls.ts";
import { CANCEL_ENTRY, type ControlState } from "../control/control-entries.ts";
import { toolCallsOf } from "../shapes/messages.ts";
import { isCustomEntry, isCustomEntryOf, isCustomMessageEntry, isMessageEntry, PRUNE_SETTINGS } from "../shapes/entries.ts";
import { isRecord } from "../shapes/json.ts";
import type { SessionData } from "../session/session-reader.ts";
import { getBranch } from "../session/session-reader.ts";
import { buildPiContext, type ContextMessage } from "../session/pi-context.ts";
import { promptLabel } from "../session/labels.ts";
import { emptyIndex, IndexBuilder, type PruneIndex } from "../prune/prune-index.ts";
import { createRenderMemo, type RenderConfig } from "../render/render.ts";
import { CompactionResendReader, resendBudget, type ResendOptions } from "../render/compaction-protect.ts";
import { MessageSizes, renderContext, type ModelView } from "./model-view.ts";
import { configOfRecord, foreignWriterDefaults, recordResendsProtected, settingsEntryData } from "./recorded-settings.ts";
import { detectSessionWriter, INERT_MARKERS, markersWereInert, type SessionWriter } from "./session-writer.ts";

/** One model request on a branch, by the assistant message that answered it. */
export interface ModelRequestRef {
  /** 1-based along the branch. */
  n: number;
  /** The entry of the assistant message that answered it. */
  entryId: string;
  /** That entry's position on the branch. */
  position: number;
  /**
   * The request was built from the branch's first `end` entries: `position`, less the entries just
   * before the answer that were written after the request went out (stamped after the answer
   * began: another writer flushing at the answer's end). Those belong to the next request.
   */
  end: number;
  /** The answer's timestamp (epoch ms), when it has one. */
  timestamp?: number;
  /** The user prompt the request worked on (the newest before it), as a one-line label. */
  prompt?: string;
  promptEntryId?: string;
  /** Tool calls in the answer. */
  toolCalls: number;
  /** The answer's stop reason ("stop", "toolUse", "error", …) when it has one. */
  stopReason?: string;
}

/** Where the settings a request is rendered with come from. */
type RequestSettingsSource =
  /** The newest settings entry the session recorded before the request. */
  | "recorded"
  /** None was recorded before it: the defaults of the writing extension's version. */
  | "writer-defaults"
  /** Neither is known: the settings in force today. */
  | "current";

export interface RequestSettings {
  source: RequestSettingsSource;
  config: RenderConfig;
  /** Who the recorded settings or the defaults are from, e.g. "pi-pruner 0.1.0". */
  writer?: string;
  /** The settings entry they come from (source "recorded"). */
  entryId?: string;
  /** Values of the recorded entry that could not be read (the writer's defaults stand in). */
  problems: string[];
  /** The writer sent protected output again after Pi's compaction (not another writer, nor a pi-pruner from before it did). */
  resendsProtected: boolean;
  /** The model's context window the record names: what bounded that re-sent output (none recorded: it was not bounded). */
  contextWindow?: number;
}

export interface RequestView extends Omit<ModelView, "leafId"> {
  request: ModelRequestRef;
  /** Requests on the branch. */
  requestCount: number;
  settings: RequestSettings;
}

export interface RequestViewOptions {
  /** Today's settings: for a request that neither recorded settings nor known writer defaults cover. */
  config: RenderConfig;
  /** The defaults of the extension that wrote the session, when the caller knows its writer and version. */
  writerDefaults?: { writer: string; config: RenderConfig };
}

/** Every model request on a branch (root → leaf), in order. */
export function modelRequests(branch: readonly AnyEntry[]): ModelRequestRef[] {
  const requests: ModelRequestRef[] = [];
  let prompt: { label: string; entryId: string } | undefined;
  branch.forEach((entry, position) => {
    if (!isMessageEntry(entry)) return;
    const message = entry.message;
    // Session files are input: a message entry may hold anything.
    if (!message || typeof message !== "object") return;
    if (message.role === "user") prompt = { label: promptLabel(message.content), entryId: entry.id };
    if (message.role !== "assistant") return;
    const ref: ModelRequestRef = { n: requests.length + 1, entryId: entry.id, position, end: position, toolCalls: toolCallsOf(message).length };
    if (typeof message.timestamp === "number") {
      ref.timestamp = message.timestamp;
      ref.end = sentBefore(branch, position, message.timestamp);
    }
    if (prompt) {
      ref.prompt = prompt.label;
      ref.promptEntryId = prompt.entryId;
    }
    const stopReason: unknown = message.stopReason;
    if (typeof stopReason === "string") ref.stopReason = stopReason;
    requests.push(ref);
  });
  return requests;
}

/** An entry's own time (epoch ms), when it has a readable one. */
function entryTime(entry: AnyEntry): number | undefined {
  const time: unknown = entry.timestamp;
  const ms = typeof time === "string" ? Date.parse(time) : typeof time === "number" ? time : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Where the request answered at `position` was built up to: the entries after the last message
 * before the answer that were written after the answer began (`startedAt`) came too late for it.
 * Within one file the times only grow, so the late ones are a tail.
 */
function sentBefore(branch: readonly AnyEntry[], position: number, startedAt: number): number {
  let end = position;
  while (end > 0) {
    const entry = branch[end - 1]!;
    if (entry.type === "message") break;
    const time = entryTime(entry);
    if (time === undefined || time <= startedAt) break;
    end--;
  }
  return end;
}

/** What request `n` of a branch sent (1-based). Throws a RangeError for an n the branch does not have. */
export function renderRequest(branch: readonly AnyEntry[], n: number, options: RequestViewOptions): RequestView {
  return new RequestRenderer(branch, options).render(n);
}

/** Entries that change the pruner's index: everything it writes but its settings record. */
function changesIndex(entry: AnyEntry): boolean {
  if (!isCustomEntry(entry) && !isCustomMessageEntry(entry)) return false;
  const customType: unknown = entry.customType;
  return typeof customType === "string" && customType.startsWith("context-prune-") && customType !== PRUNE_SETTINGS;
}

/** Entries after which Pi's context is built again rather than extended. */
function reshapesContext(entry: AnyEntry): boolean {
  return entry.type === "compaction" || entry.type === "context_edit";
}

/**
 * A shrink retired as stale: the live pruner retires it while a request is being sent, after that
 * request's render, so it takes effect from the next request on.
 */
function isStaleCancel(entry: AnyEntry): boolean {
  if (!isCustomEntryOf(entry, CANCEL_ENTRY)) return false;
  const data = entry.data;
  return isRecord(data) && data.reason === "stale";
}

/**
 * The requests of one branch, rendered one at a time. Asked for requests in order, it carries Pi's
 * context, the index, the markers and the settings forward over the entries in between (the
 * render then reuses the previous request's result, as it does live); asked for an earlier one, it
 * starts again from the branch's start. Either way a request's view is the same.
 */
export class RequestRenderer {
  private _requests: ModelRequestRef[];
  private branch: readonly AnyEntry[];
  private readonly options: RequestViewOptions;
  /** Entries consumed: the state below is that of the branch's first `consumed` entries. */
  private consumed = 0;
  private context: ContextMessage[] = [];
  private indexBuilder = new IndexBuilder();
  private index: PruneIndex = emptyIndex();
  private controls = new ControlsReader();
  /** What the markers were last read from: the branch's first `controlsBase` entries, then the request's tail without its stale retirements. */
  private controlsInput: AnyEntry[] = [];
  private controlsBase = 0;
  private settingsEntry: AnyEntry | undefined;
  /** The consumed entries hold a context edit: Pi applies one to its target wherever that comes, so the context is built whole from then on. */
  private edited = false;
  /** The newest compaction among the consumed entries (-1: none), and what its requests send again of protected output. */
  private compactionAt = -1;
  private readonly resends = new CompactionResendReader();
  private readonly recorded = new Map<AnyEntry, RequestSettings>();
  private current: RequestSettings | undefined;
  private writerFound: SessionWriter | undefined;
  /** What one request's render and sizes leave for the next's. */
  private readonly carried = { sizes: new MessageSizes(), memo: createRenderMemo() };

  constructor(branch: readonly AnyEntry[], options: RequestViewOptions) {
    this.branch = branch;
    this.options = options;
    this._requests = modelRequests(branch);
  }

  get requests(): readonly ModelRequestRef[] {
    return this._requests;
  }

  get count(): number {
    return this._requests.length;
  }

  /**
   * Takes the branch after entries were appended to it (the caller checked that it begins with
   * this one's entries): what was carried forward stays, so the new requests cost only themselves.
   */
  carryOn(branch: readonly AnyEntry[]): void {
    this.branch = branch;
    this._requests = modelRequests(branch);
    // Entries appended may name another writer.
    this.writerFound = undefined;
    this.current = undefined;
  }

  /** Who wrote the branch's entries (read once, on first need). */
  private writer(): SessionWriter {
    return (this.writerFound ??= detectSessionWriter(this.branch));
  }

  render(n: number): RequestView {
    const request = this._requests[n - 1];
    if (!Number.isInteger(n) || !request) throw new RangeError(`request ${n} is not on this branch (it has ${this._requests.length})`);
    this.advanceTo(request.end);
    const settings = this.settingsNow();
    // Only a writer that did sends protected output again after Pi's compaction.
    const resend = () => (settings.resendsProtected ? this.resends.at(this.branch, this.compactionAt, settings.config, resendOptions(settings, request.end)) : undefined);
    // Markers that did nothing when the request was sent are listed, not applied.
    const inert = markersWereInert(this.writer()) ? INERT_MARKERS : undefined;
    const view = renderContext(this.context, this.index, settings.config, () => this.controlsNow(request.end), this.carried, resend, inert);
    return { ...view, request, requestCount: this._requests.length, settings };
  }

  /** Brings the state to the branch's first `end` entries. */
  private advanceTo(end: number): void {
    let rebuildContext = false;
    let indexChanged = false;
    if (end < this.consumed || this.consumed === 0) {
      this.consumed = 0;
      this.context = [];
      this.indexBuilder = new IndexBuilder();
      this.index = emptyIndex();
      this.controls = new ControlsReader();
      this.controlsInput = [];
      this.controlsBase = 0;
      this.settingsEntry = undefined;
      this.edited = false;
      this.compactionAt = -1;
      rebuildContext = indexChanged = end > 0;
    }
    if (this.edited && end > this.consumed) rebuildContext = true;
    for (let i = this.consumed; i < end; i++) {
      const entry = this.branch[i]!;
      if (reshapesContext(entry)) rebuildContext = true;
      if (entry.type === "context_edit") this.edited = true;
      if (entry.type === "compaction") this.compactionAt = i;
      if (changesIndex(entry)) indexChanged = true;
      if (settingsEntryData(entry)) this.settingsEntry = entry;
      this.indexBuilder.add(entry);
    }
    if (rebuildContext) this.context = buildPiContext(this.branch.slice(0, end));
    else if (end > this.consumed) {
      // An entry that neither compacts nor edits only adds its own messages at the end (in place:
      // a view keeps none of this array).
      for (const c of buildPiContext(this.branch.slice(this.consumed, end))) this.context.push(c);
    }
    // A new index object, as a rebuild gives: the render's memory of the previous index does not apply to it.
    if (indexChanged) this.index = this.indexBuilder.index();
    this.consumed = end;
  }

  /** The markers as the request built from the first `position` entries was rendered with them. */
  private controlsNow(position: number): ControlState {
    // Stale retirements written after the last message before the answer came after its render.
    let end = position;
    while (end > 0 && this.branch[end - 1]!.type !== "message") end--;
    if (end < this.controlsBase) {
      this.controlsInput = [];
      this.controlsBase = 0;
    }
    // The input grows with the branch (the previous request's tail dropped), so the reader scans only what is new.
    const input = this.controlsInput;
    input.length = this.controlsBase;
    for (let i = this.controlsBase; i < end; i++) input.push(this.branch[i]!);
    this.controlsBase = end;
    for (let i = end; i < position; i++) if (!isStaleCancel(this.branch[i]!)) input.push(this.branch[i]!);
    return this.controls.read(input);
  }

  private settingsNow(): RequestSettings {
    const entry = this.settingsEntry;
    if (entry) {
      let settings = this.recorded.get(entry);
      if (!settings) {
        const data = settingsEntryData(entry)!;
        const { config, problems } = configOfRecord(data);
        settings = { source: "recorded", config, entryId: entry.id, problems, resendsProtected: recordResendsProtected(data) };
        if (data.contextWindow !== undefined) settings.contextWindow = data.contextWindow;
        if (data.version !== undefined) settings.writer = `pi-pruner ${data.version}`;
        this.recorded.set(entry, settings);
      }
      return settings;
    }
    const defaults = this.options.writerDefaults ?? foreignWriterDefaults(this.writer());
    this.current ??= defaults
      ? { source: "writer-defaults", config: defaults.config, writer: defaults.writer, problems: [], resendsProtected: false }
      : // No record: no pi-pruner that re-sends protected output wrote these requests (it records its settings first).
        { source: "current", config: this.options.config, problems: [], resendsProtected: false };
    return this.current;
  }
}

/** Which request of a branch: a number (1-based) or the last one sent. */
export type RequestChoice = number | "last";

function requestNumber(renderer: RequestRenderer, choice: RequestChoice): number {
  return choice === "last" ? renderer.count : choice;
}

/** A request's view on the branch of `leafId` (the file's last entry when absent), or undefined when the branch sent no request. */
export function buildRequestView(data: SessionData, options: RequestViewOptions & { leafId?: string; request: RequestChoice }): (RequestView & { leafId: string | null }) | undefined {
  if (data.elided?.size) throw new Error("this session was read with lazyBodies: its request views need its long bodies read back first (BodyCache.withBodies, then a RequestRenderer over the entries)");
  const branch = getBranch(data, options.leafId);
  const renderer = new RequestRenderer(branch.entries, options);
  if (renderer.count === 0) return undefined;
  return { leafId: branch.leafId, ...renderer.render(requestNumber(renderer, options.request)) };
}


/** The request's place in a person's words: "request 3 of 7", the last one sent named so. */
export function requestTitle(view: Pick<RequestView, "request" | "requestCount">): string {
  const last = view.request.n === view.requestCount ? " (the last request sent)" : "";
  return `request ${view.request.n} of ${view.requestCount}${last}`;
}

/** Which settings a request view was rendered with, in a person's words. */
export function settingsSourceText(settings: RequestSettings): string {
  switch (settings.source) {
    case "recorded":
      return `rendered with the settings the session recorded before this request${settings.writer ? ` (by ${settings.writer})` : ""}`;
    case "writer-defaults":
      return `rendered with the defaults of ${settings.writer ?? "the session's writer"}: the session recorded no settings before this request`;
    case "current":
      return "rendered with today's settings: the session recorded no settings before this request, so what was sent may have differed";
  }
}

/** What no view of a session can show, said in every request view's header. */
export const NUDGES_NOT_SHOWN = "nudges that rode the request (the drift and high-water notes) are never written to the session and are not shown";

/** How a request's re-sent protected output was bounded: by the share of the window its record names, reading the branch's first `end` entries. */
function resendOptions(settings: RequestSettings, end: number): ResendOptions {
  return { budgetTokens: resendBudget(settings.config, settings.contextWindow), end };
}
