// The pure transform from the messages Pi would send to the messages the model sees.
// The same function serves Pi live (the `context` event) and the editor's model view.
//
// Order: the agent's own rewinds and shrinks → stub-replace → the person's old shell output → error purge → chain range prune → orphan sweep → thinking strip
// → protected outputs a Pi compaction removed, sent again after its summary (compaction-protect.ts).
// The time-dependent steps (recovery grace, shell output, error purge, thinking strip) count turns only up to the
// newest flush (the index's epoch), so under `cacheAware` history changes only at a flush.
// Invariants: nothing to change → the input array itself comes back (no copy, no serialisation);
// every step copies only the messages it changes; stubs and blocks are deterministic so the
// rendered prefix stays byte-stable between turns (prompt cache); protected output is never
// replaced or dropped.
import type { AgentMessage } from "../shapes/messages.ts";
import { messageFingerprint } from "../shapes/fingerprint.ts";
import { PRUNE_SUMMARY, QUERY_TOOL } from "../shapes/entries.ts";
import type { PruneIndex } from "../prune/prune-index.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../settings/config.ts";
import { stubResults, type StubStats } from "./stubs.ts";
import { promptsToShellStub, stubUserShell, type UserShellStats } from "./user-shell.ts";
import { purgeErroredArgs, type ErrorPurgeStats } from "./error-purge.ts";
import { pruneChainRanges, type ChainRenderStats } from "./chain-blocks.ts";
import { sweepOrphans, type OrphanSweepStats } from "./orphan-sweep.ts";
import { stripThinking, type ThinkingStripStats } from "./thinking-strip.ts";
import { epochEnd } from "./epoch.ts";
import { applySelfControl, type SelfControlStats } from "./self-control.ts";
import { hasActiveControls, type ControlState } from "../control/control-entries.ts";
import { insertCompactionResend, type CompactionResend, type CompactionResendStats } from "./compaction-protect.ts";

/** The settings the render reads. The nested blocks default to DEFAULT_CONFIG's when absent. */
export type RenderConfig = Pick<PruneConfig, "enabled" | "protectedTools" | "protectedPaths" | "recoveryGraceTurns"> &
  Partial<Pick<PruneConfig, "chainCompression" | "purgeErrors" | "userShell" | "thinkingStrip" | "cacheAware" | "selfControl" | "protectedResendShare">>;

export interface RenderStats extends SelfControlStats, StubStats, UserShellStats, ErrorPurgeStats, ChainRenderStats, OrphanSweepStats, ThinkingStripStats, CompactionResendStats {}

function emptyRenderStats(): RenderStats {
  return {
    rewoundMessages: 0,
    shrunkMessages: 0,
    rewindKeptProtected: 0,
    stubbed: 0,
    keptProtected: 0,
    keptInGrace: 0,
    shellOutputsStubbed: 0,
    purgedArgs: 0,
    chainsCompressed: 0,
    summariesSuppressed: 0,
    protectedRelocated: 0,
    unresolvedChains: [],
    orphansDropped: 0,
    resultsReattached: 0,
    resultsSynthesized: 0,
    thinkingStripped: 0,
    protectedResent: 0,
  };
}

export interface RenderResult {
  messages: AgentMessage[];
  stats: RenderStats;
}

/**
 * `controls` are the branch's self-control markers (readControls); they apply only while
 * `selfControl` is enabled, and even with the pruner itself off. `memo` is what the caller keeps
 * of the request it rendered last (createRenderMemo: one per live session, or per pass over a
 * branch's requests): a request that begins with that one's messages renders only what was
 * appended. Without one the whole array is rendered (renderWhole) and nothing is remembered.
 * `resend` is what the branch's newest Pi compaction removed of protected output
 * (CompactionResendReader), sent again after its summary while the pruner is on.
 */
export function renderModelView(messages: AgentMessage[], index: PruneIndex, config: RenderConfig, controls?: ControlState, memo?: RenderMemo, resend?: CompactionResend): RenderResult {
  const active = activeControls(config, controls);
  if (!config.enabled) return active ? renderWhole(messages, index, config, active) : { messages, stats: emptyRenderStats() };
  if (!memo) return renderWhole(messages, index, config, active, undefined, resend);
  return renderIncrementally(memo, messages, index, config, active, resend);
}

function activeControls(config: RenderConfig, controls: ControlState | undefined): ControlState | undefined {
  if (!controls || !hasActiveControls(controls)) return undefined;
  return (config.selfControl ?? DEFAULT_CONFIG.selfControl).enabled ? controls : undefined;
}

/** The render's steps, in order: what `renderWhole` can report after each. */
export const RENDER_STEPS = ["self-control", "stubs", "user-shell", "error-purge", "chains", "orphan-sweep", "thinking-strip", "compaction-protect"] as const;
export type RenderStep = (typeof RENDER_STEPS)[number];

/**
 * Every step over the whole array, nothing remembered: what the first request after a flush costs.
 * `observe` is shown the messages after each step (the audit's breakdown).
 */
export function renderWhole(
  input: AgentMessage[],
  index: PruneIndex,
  config: RenderConfig,
  controls?: ControlState,
  observe?: (step: RenderStep, messages: readonly AgentMessage[]) => void,
  resend?: CompactionResend,
): RenderResult {
  const stats = emptyRenderStats();
  const active = activeControls(config, controls);
  if (!config.enabled) {
    const messages = active ? applySelfControl(input, active, config, stats).messages : input;
    for (const step of RENDER_STEPS) observe?.(step, messages);
    return { messages, stats };
  }
  const { messages, shrunk } = applySelfControl(input, active, config, stats);
  observe?.("self-control", messages);
  const full = {
    ...config,
    chainCompression: config.chainCompression ?? DEFAULT_CONFIG.chainCompression,
    purgeErrors: config.purgeErrors ?? DEFAULT_CONFIG.purgeErrors,
    userShell: config.userShell ?? DEFAULT_CONFIG.userShell,
    thinkingStrip: config.thinkingStrip ?? DEFAULT_CONFIG.thinkingStrip,
  };
  const inEpoch = (view: readonly AgentMessage[]) => (config.cacheAware ?? DEFAULT_CONFIG.cacheAware ? epochEnd(view, index.epoch) : view.length);
  const end = inEpoch(messages);
  let current = stubResults(messages, index, config, stats, end, shrunk);
  observe?.("stubs", current);
  current = stubUserShell(current, full, stats, end, shrunk);
  observe?.("user-shell", current);
  current = purgeErroredArgs(current, messages, full, stats, end);
  observe?.("error-purge", current);
  current = pruneChainRanges(current, messages, index, full, stats);
  observe?.("chains", current);
  current = sweepOrphans(current, stats);
  observe?.("orphan-sweep", current);
  // Chain blocks and the sweep change positions: the epoch's end is found again in what they left.
  current = stripThinking(current, full, stats, inEpoch(current));
  observe?.("thinking-strip", current);
  // Last, so no step above counts or moves the inserted message; it only adds one after the summary.
  current = insertCompactionResend(current, resend, stats);
  observe?.("compaction-protect", current);
  return { messages: current, stats };
}

// Pi hands the `context` handler a fresh deep copy of the whole context on every request, and
// between two requests history only grows at the end. So the render of the previous request is
// remembered, and a request with the same index and settings whose messages begin with the same
// ones (compared by what survives a copy: messageFingerprint, never by object) reuses it and
// renders only what was appended. Anything that could change the earlier part renders the whole
// array again: another index state or settings, appended messages that reach back into history (a
// chain boundary or an epoch), a grace window or purge cooldown that the appended turns would run
// out, or the thinking strip (which moves with every turn).

/** What the render remembers between requests: its owner's (see renderModelView), never shared. */
export interface RenderMemo {
  /** The request rendered last; undefined before the first. Read and written by the render only. */
  last: RememberedRender | undefined;
  /** How a request is told to begin with the remembered one's messages (RenderMemoOptions). */
  readonly prefix: "every" | "sampled";
  /** Requests rendered so far by how: whole, only what was appended, or the remembered render reused as it was. */
  readonly renders: { whole: number; appended: number; same: number };
}

interface RenderMemoOptions {
  /**
   * "every" (the default) compares each remembered message with the one at its place (by object,
   * else by fingerprint): for a view's pass over a branch, which hands over the same objects.
   * "sampled" compares only the first and those 1, 2, 3, 5, 9, 17, … places before the remembered
   * end, by fingerprint: for Pi's `context` event, whose fresh copy per request makes the full
   * comparison the cost of an unchanged request (see samplePositions for what it can miss).
   */
  prefix?: "every" | "sampled";
}

export function createRenderMemo(options: RenderMemoOptions = {}): RenderMemo {
  return { last: undefined, prefix: options.prefix ?? "every", renders: { whole: 0, appended: 0, same: 0 } };
}

interface RememberedRender {
  index: PruneIndex;
  config: RenderConfig;
  controls: ControlState | undefined;
  resend: CompactionResend | undefined;
  parts: readonly unknown[];
  signature: string;
  /** messageFingerprint of each input message. */
  fingerprints: number[];
  /** The remembered request's messages (a copy of the array). */
  input: AgentMessage[];
  output: AgentMessage[];
  /**
   * For each output message, the input position it passed through from, or -1 for one the render
   * made; worked out when first needed (a caller that hands over the same objects never needs it).
   */
  sources: Int32Array | undefined;
  /** The whole input came back as it was. */
  unchanged: boolean;
  stats: RenderStats;
  usersToFlip: number;
  assistantsToFlip: number;
  boundaries: Set<number>;
  /** False when appended messages can change the earlier part in ways not checked above. */
  appendable: boolean;
}

function settingParts(config: RenderConfig): unknown[] {
  return [config.protectedTools, config.protectedPaths, config.recoveryGraceTurns, config.chainCompression, config.purgeErrors, config.userShell, config.thinkingStrip, config.cacheAware];
}

function indexSignature(index: PruneIndex): string {
  return `${index.calls.size}:${index.aliases.size}:${index.chains.length}:${index.summaries.length}:${index.byShortRef.size}:${index.lastRefNumber}:${index.lastBlockNumber}:${index.epoch}`;
}

function sameSettings(memo: RememberedRender, config: RenderConfig, index: PruneIndex, controls: ControlState | undefined, resend: CompactionResend | undefined): boolean {
  if (memo.index !== index || memo.controls !== controls || memo.resend !== resend) return false;
  if (memo.config !== config) {
    const parts = settingParts(config);
    if (parts.some((p, i) => p !== memo.parts[i])) return false;
  }
  return memo.signature === indexSignature(index);
}

/**
 * The places a "sampled" memo compares, for a remembered request of `length` messages: the first,
 * and 1, 2, 3, 5, 9, 17, … (2^k + 1) places before the end, so about log2(length) + 2 of them.
 * Between two of Pi's requests history grows at its end; what reshapes it moves messages across
 * these places: a compaction puts its summary first, a retry or a branch switch replaces the last
 * messages, and a message dropped or inserted anywhere before the end shifts the last one (which
 * is compared). What it cannot see is a message replaced in place between two sampled places by
 * one with another role, timestamp, tool-call id or content shape, with nothing moved: Pi does
 * not do that, and the render's other inputs (the index, the settings, the agent's markers, the
 * compaction's resend) are compared whole before the messages are.
 */
function samplePositions(length: number): number[] {
  const positions = [0];
  for (let back = 1; back <= length; back = back === 1 ? 2 : back * 2 - 1) positions.push(length - back);
  return positions;
}

function prefixMatches(memo: RememberedRender, messages: readonly AgentMessage[], length: number, prefix: RenderMemo["prefix"]): boolean {
  const { fingerprints, input } = memo;
  if (prefix === "sampled") {
    for (const i of samplePositions(length)) if (messages[i] !== input[i] && messageFingerprint(messages[i]!) !== fingerprints[i]) return false;
    return true;
  }
  for (let i = 0; i < length; i++) {
    const m = messages[i]!;
    // The very message remembered (a view's pass hands over the same objects) is what it was.
    if (m === input[i]) continue;
    if (messageFingerprint(m) !== fingerprints[i]) return false;
  }
  return true;
}

/** The remembered output with every message it passed through taken from this request's copy. */
function remembered(memo: RememberedRender, messages: AgentMessage[], length: number): AgentMessage[] {
  if (memo.unchanged) return messages.slice(0, length);
  const out = memo.output.slice();
  // The very objects it passed through (a view's pass over a branch): nothing to take.
  let same = true;
  for (let i = 0; i < length && same; i++) same = messages[i] === memo.input[i];
  if (same) return out;
  memo.sources ??= sourcesOf(memo.input, memo.output, 0);
  const sources = memo.sources;
  for (let j = 0; j < out.length; j++) if (sources[j]! >= 0) out[j] = messages[sources[j]!]!;
  return out;
}

function copyStats(stats: RenderStats): RenderStats {
  return { ...stats, unresolvedChains: stats.unresolvedChains.slice() };
}

/** The counts a render reports: every stat but the list of chains it could not place. */
const RENDER_COUNTS = [
  "rewoundMessages",
  "shrunkMessages",
  "rewindKeptProtected",
  "stubbed",
  "keptProtected",
  "keptInGrace",
  "shellOutputsStubbed",
  "purgedArgs",
  "chainsCompressed",
  "summariesSuppressed",
  "protectedRelocated",
  "orphansDropped",
  "resultsReattached",
  "resultsSynthesized",
  "thinkingStripped",
  "protectedResent",
] as const satisfies readonly (keyof RenderStats)[];
// A count a step adds to its stats must be listed above too, or this stops compiling.
const everyCountListed: Record<Exclude<keyof RenderStats, "unresolvedChains" | (typeof RENDER_COUNTS)[number]>, never> = {};

function addStats(a: RenderStats, b: RenderStats): RenderStats {
  const sum = copyStats(a);
  for (const key of RENDER_COUNTS) sum[key] += b[key];
  sum.unresolvedChains.push(...b.unresolvedChains);
  return sum;
}

function sourcesOf(input: readonly AgentMessage[], output: readonly AgentMessage[], offset: number): Int32Array {
  const at = new Map<AgentMessage, number>();
  for (let i = 0; i < input.length; i++) at.set(input[i]!, i + offset);
  const sources = new Int32Array(output.length);
  for (let j = 0; j < output.length; j++) sources[j] = at.get(output[j]!) ?? -1;
  return sources;
}

/**
 * How many more user turns and assistant turns may be appended before a grace window, a shell
 * output's prompts or a purge cooldown among `messages` could run out (counted over the whole array, at least what the steps
 * count): past that, the earlier part may render differently.
 */
function flipDistances(messages: readonly AgentMessage[], config: RenderConfig): { users: number; assistants: number } {
  const grace = config.recoveryGraceTurns;
  const purge = config.purgeErrors ?? DEFAULT_CONFIG.purgeErrors;
  let users = Infinity;
  let assistants = Infinity;
  let totalAssistants = 0;
  for (const m of messages) if (m.role === "assistant") totalAssistants++;
  let usersAfter = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") usersAfter++;
    else if (m.role === "toolResult" && m.toolName === QUERY_TOOL && usersAfter < grace) users = Math.min(users, grace - usersAfter);
  }
  if (purge.enabled) {
    let seen = 0;
    let turnAfter = -1;
    for (const m of messages) {
      if (m.role === "assistant") {
        seen++;
        turnAfter = totalAssistants - seen;
      } else if (m.role === "toolResult" && m.isError && turnAfter >= 0 && turnAfter < purge.cooldownTurns) {
        assistants = Math.min(assistants, purge.cooldownTurns - turnAfter);
      }
    }
  }
  users = Math.min(users, promptsToShellStub(messages, { userShell: config.userShell ?? DEFAULT_CONFIG.userShell }));
  return { users, assistants };
}

/**
 * Remembers a whole render. One after a flush (a new index state) mostly begins with the messages
 * remembered before, the same objects when a view passes over a branch's requests: their
 * fingerprints are copied instead of taken again.
 */
function remember(memo: RenderMemo, index: PruneIndex, messages: readonly AgentMessage[], config: RenderConfig, controls: ControlState | undefined, resend: CompactionResend | undefined, result: RenderResult): void {
  const n = messages.length;
  const fingerprints = new Array<number>(n);
  let i = 0;
  const last = memo.last;
  if (last) {
    const shared = Math.min(n, last.input.length);
    for (; i < shared && messages[i] === last.input[i]; i++) fingerprints[i] = last.fingerprints[i]!;
  }
  for (; i < n; i++) fingerprints[i] = messageFingerprint(messages[i]!);
  const boundaries = new Set<number>();
  for (const chain of index.chains) {
    boundaries.add(chain.startUserTimestamp);
    if (typeof chain.finalAssistantTimestamp === "number") boundaries.add(chain.finalAssistantTimestamp);
  }
  const flips = flipDistances(messages, config);
  const unchanged = result.messages === messages;
  memo.last = {
    index,
    config,
    controls,
    resend,
    parts: settingParts(config),
    signature: indexSignature(index),
    fingerprints,
    input: messages.slice(),
    output: result.messages,
    sources: undefined,
    unchanged,
    stats: copyStats(result.stats),
    usersToFlip: flips.users,
    assistantsToFlip: flips.assistants,
    boundaries,
    // Active rewinds and shrinks apply by identity anywhere in the array: the whole array renders again.
    appendable: !controls && !(config.thinkingStrip ?? DEFAULT_CONFIG.thinkingStrip).enabled && result.stats.unresolvedChains.every((c) => c.absent),
  };
}

/** Renders only what was appended since the remembered request, or undefined when that is not safe. */
function renderAppended(memo: RememberedRender, messages: AgentMessage[], index: PruneIndex, config: RenderConfig): RenderResult | undefined {
  const start = memo.fingerprints.length;
  const first = messages[start]!;
  // A turn that continues across the cut (results or notices of the remembered last turn) pairs with it.
  if (first.role !== "user" && first.role !== "assistant") return undefined;
  let users = 0;
  let assistants = 0;
  for (let i = start; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "user") users++;
    else if (m.role === "assistant") assistants++;
    else if (m.role === "custom" && m.customType === PRUNE_SUMMARY) return undefined;
    if ((m.role === "user" || m.role === "assistant") && memo.boundaries.has(m.timestamp)) return undefined;
    if (index.epoch !== undefined && m.timestamp <= index.epoch) return undefined;
  }
  if (users >= memo.usersToFlip || assistants >= memo.assistantsToFlip) return undefined;
  const appended = messages.slice(start);
  // No chain lies in the appended part (no boundary is there): chains are left to the earlier part.
  const chainCompression = { ...(config.chainCompression ?? DEFAULT_CONFIG.chainCompression), enabled: false };
  const part = renderWhole(appended, index, { ...config, chainCompression });
  const unchanged = memo.unchanged && part.messages === appended;
  const output = unchanged ? messages : remembered(memo, messages, start).concat(part.messages);
  const stats = addStats(memo.stats, part.stats);
  // What the next request compares against and reuses.
  for (const m of appended) {
    memo.fingerprints.push(messageFingerprint(m));
    memo.input.push(m);
  }
  // Sources carried on only where they were already needed (see `sources`); else worked out when they are.
  if (!unchanged && (memo.sources || memo.unchanged)) {
    const partSources = part.messages === appended ? undefined : sourcesOf(appended, part.messages, start);
    const prefixSources = memo.sources ?? Int32Array.from({ length: start }, (_, i) => i);
    const sources = new Int32Array(output.length);
    sources.set(prefixSources, 0);
    if (partSources) sources.set(partSources, prefixSources.length);
    else for (let j = 0; j < part.messages.length; j++) sources[prefixSources.length + j] = start + j;
    memo.sources = sources;
  }
  memo.output = output;
  memo.unchanged = unchanged;
  memo.stats = copyStats(stats);
  const flips = flipDistances(appended, config);
  memo.usersToFlip = Math.min(memo.usersToFlip - users, flips.users);
  memo.assistantsToFlip = Math.min(memo.assistantsToFlip - assistants, flips.assistants);
  return { messages: output, stats };
}

function renderIncrementally(memo: RenderMemo, messages: AgentMessage[], index: PruneIndex, config: RenderConfig, controls: ControlState | undefined, resend: CompactionResend | undefined): RenderResult {
  const last = memo.last;
  if (last && sameSettings(last, config, index, controls, resend)) {
    const length = last.fingerprints.length;
    if (length > 0 && messages.length >= length && prefixMatches(last, messages, length, memo.prefix)) {
      if (messages.length === length) {
        memo.renders.same++;
        return { messages: last.unchanged ? messages : remembered(last, messages, length), stats: copyStats(last.stats) };
      }
      if (last.appendable) {
        const appended = renderAppended(last, messages, index, config);
        if (appended) {
          memo.renders.appended++;
          return appended;
        }
      }
    }
  }
  memo.renders.whole++;
  const result = renderWhole(messages, index, config, controls, undefined, resend);
  remember(memo, index, messages, config, controls, resend, result);
  return result;
}
