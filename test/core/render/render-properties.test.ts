// Property tests of the render over thousands of generated branches: random chains, parallel tool
// calls, tool-call ids reused across turns, failed calls with large arguments, custom messages
// between calls and results, protected calls, partial summaries, spills, chain entries (good,
// stale and nonsensical) and compressions planned by the pruner itself.
//
// The checker below is written from the invariants of design.md section 5, not from the code
// under test: it pairs calls and results itself, decides protection from its own table, and never
// calls into core except to build the input (Pi's context) and to run the render.
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { createRenderMemo, renderModelView } from "../../../core/src/render/render.ts";
import { PURGE_STRING_BOUND } from "../../../core/src/render/error-purge.ts";
import { compressChains } from "../../../core/src/prune/chain-plan.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import type { AnyEntry, ChainData, ToolCallRecord, ToolCallRef } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantBlock, AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import type { Summarizer } from "../../../core/src/prune/summarizer-prompts.ts";

// ---------------------------------------------------------------------------------------------
// Generated branches

const TOOLS = ["read", "bash", "todo", "write"] as const;
const PATHS = ["src/a.ts", "src/b.ts", "skills/deploy/SKILL.md", "skills/x.md", "notes/skills.md"] as const;
/** The checker's own protection table: `todo` by name, two paths by the `**\/skills/**\/*.md` glob. */
const PROTECTED_PATHS = new Set<string>(["skills/deploy/SKILL.md", "skills/x.md"]);
const checkerProtects = (tool: string, path: string) => tool === "todo" || PROTECTED_PATHS.has(path);

const callArb = fc.record({
  tool: fc.constantFrom(...TOOLS),
  path: fc.constantFrom(...PATHS),
  bigResult: fc.boolean(),
  bigArgs: fc.boolean(),
  isError: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
});

const turnArb = fc
  .array(callArb, { minLength: 1, maxLength: 3 })
  .chain((calls) =>
    fc.record({
      calls: fc.constant(calls),
      // Ids come from a small pool: unique within one response, reused across responses.
      ids: fc.uniqueArray(fc.integer({ min: 0, max: 4 }), { minLength: calls.length, maxLength: calls.length }),
      thinking: fc.boolean(),
      noticeBefore: fc.option(fc.integer({ min: 0, max: calls.length - 1 }), { freq: 4 }),
      summarize: fc.constantFrom("none", "none", "after-turn", "at-chain-end"),
      spillFirst: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
      indexProtectedToo: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
      anomaly: fc.constantFrom("none", "none", "none", "none", "none", "none", "missing", "stray", "duplicate"),
    }),
  );

const chainArb = fc.record({
  turns: fc.array(turnArb, { minLength: 0, maxLength: 4 }),
  closed: fc.integer({ min: 0, max: 5 }).map((n) => n !== 0),
  finalThinking: fc.boolean(),
  compress: fc.constantFrom("no", "no", "entry", "entry-with-range-summary", "entry-without-protected-ids"),
  noteAfter: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
});

const configArb = fc.record({
  chainEnabled: fc.integer({ min: 0, max: 5 }).map((n) => n !== 0),
  stripFinal: fc.boolean(),
  purgeEnabled: fc.boolean(),
  cooldownTurns: fc.integer({ min: 0, max: 3 }),
  minArgChars: fc.constantFrom(0, 100, 500, 2000),
  thinkingStrip: fc.boolean(),
  keepLastTurns: fc.integer({ min: 0, max: 6 }),
});

const branchArb = fc.record({
  chains: fc.array(chainArb, { minLength: 1, maxLength: 7 }),
  bogus: fc.array(fc.constantFrom("unknown-timestamps", "across-chains", "reversed", "final-calls-tools"), { maxLength: 2 }),
  duplicateUserTimestamp: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  config: configArb,
});

type BranchSpec = typeof branchArb extends fc.Arbitrary<infer T> ? T : never;

interface Generated {
  entries: AnyEntry[];
  config: PruneConfig;
}

// The steps' own turn counting (cacheAware off): epochs.test.ts covers counting by flushes.
function toConfig(c: BranchSpec["config"]): PruneConfig {
  return {
    ...DEFAULT_CONFIG,
    cacheAware: false,
    protectedTools: ["todo"],
    protectedPaths: ["**/skills/**/*.md"],
    chainCompression: { ...DEFAULT_CONFIG.chainCompression, enabled: c.chainEnabled, stripFinalAssistantThinking: c.stripFinal },
    purgeErrors: { enabled: c.purgeEnabled, cooldownTurns: c.cooldownTurns, minArgChars: c.minArgChars },
    thinkingStrip: { enabled: c.thinkingStrip, keepLastTurns: c.keepLastTurns },
  };
}

/** Turns a spec into session entries the way Pi and the pruner would write them. */
function materialize(spec: BranchSpec): Generated {
  const entries: AnyEntry[] = [];
  let clock = Date.UTC(2025, 0, 1);
  let entryCount = 0;
  let refCount = 0;
  let blockCount = 0;
  const tick = () => (clock += 1000);
  const append = (fields: Record<string, unknown>, time = tick()) => {
    const entry = { id: `e${++entryCount}`, parentId: entries.length ? entries[entries.length - 1]!.id : null, timestamp: new Date(time).toISOString(), ...fields } as AnyEntry;
    entries.push(entry);
  };
  const message = (m: AgentMessage) => append({ type: "message", message: m }, m.timestamp);

  interface MadeCall {
    id: string;
    tool: string;
    args: Record<string, unknown>;
    text: string;
    isError: boolean;
    callTs: number;
    resultTs: number;
    isProtected: boolean;
    ref?: string;
  }
  const indexAndSummarize = (calls: MadeCall[], withSummary: boolean) => {
    if (!calls.length) return;
    const records: ToolCallRecord[] = [];
    const refs: ToolCallRef[] = [];
    for (const c of calls) {
      c.ref = `t${++refCount}`;
      records.push({ toolCallId: c.id, toolName: c.tool, args: c.args, resultText: c.text, isError: c.isError, timestamp: c.callTs, resultTimestamp: c.resultTs });
      refs.push({ shortId: c.ref, toolCallId: c.id, resultTimestamp: c.resultTs });
    }
    append({ type: "custom", customType: "context-prune-index", data: { toolCalls: records, refs } });
    if (withSummary) {
      const content = calls.map((c) => `- \`${c.ref}\` ${c.tool} summarized`).join("\n");
      append({ type: "custom_message", customType: "context-prune-summary", content, display: false, details: { toolCallRefs: refs, toolNames: [...new Set(calls.map((c) => c.tool))] } });
    }
  };
  const spill = (c: MadeCall) => {
    c.ref = `t${++refCount}`;
    const record: ToolCallRecord = { toolCallId: c.id, toolName: c.tool, args: c.args, resultText: "", isError: c.isError, timestamp: c.callTs, resultTimestamp: c.resultTs, spillPath: `/blobs/${c.id}.txt`, spillBytes: c.text.length, resultPreview: c.text.slice(0, 20) };
    append({ type: "custom", customType: "context-prune-index", data: { toolCalls: [record], refs: [{ shortId: c.ref, toolCallId: c.id, resultTimestamp: c.resultTs }] } });
  };

  const boundaries: { userTs: number; finalTs?: number; toolAssistantTs: number[] }[] = [];
  let firstUserTs: number | undefined;
  spec.chains.forEach((chainSpec, ci) => {
    const isLast = ci === spec.chains.length - 1;
    let userTs = tick();
    if (spec.duplicateUserTimestamp && ci === spec.chains.length - 1 && firstUserTs !== undefined && ci > 0) userTs = firstUserTs;
    firstUserTs ??= userTs;
    message({ role: "user", content: `prompt ${ci}`, timestamp: userTs });
    const boundary: (typeof boundaries)[number] = { userTs, toolAssistantTs: [] };
    const chainCalls: MadeCall[] = [];
    const atChainEnd: MadeCall[][] = [];
    chainSpec.turns.forEach((turn, ti) => {
      const callTs = tick();
      boundary.toolAssistantTs.push(callTs);
      const made: MadeCall[] = turn.calls.map((c, k) => {
        const args: Record<string, unknown> = c.tool === "bash" ? { command: `run ${c.path}` } : { path: c.path };
        if (c.bigArgs) args.content = "y".repeat(700);
        const isProtected = checkerProtects(c.tool, typeof args.path === "string" ? args.path : "");
        const text = isProtected ? `PROTECTED ${ci}.${ti}.${k} ${c.tool} ${c.path}` : c.bigResult ? `output ${ci}.${ti}.${k}\n${"x".repeat(1200)}` : `small ${ci}.${ti}.${k}`;
        return { id: `call_${turn.ids[k]}`, tool: c.tool, args, text, isError: c.isError, callTs, resultTs: 0, isProtected };
      });
      const content: AssistantBlock[] = [];
      // Thinking comes as one or two blocks: a message keeps or loses the whole sequence.
      if (turn.thinking) content.push({ type: "thinking", thinking: `reasoning ${ci}.${ti}`, thinkingSignature: `sig ${ci}.${ti}` });
      if (turn.thinking && ti % 2 === 1) content.push({ type: "thinking", thinking: `more reasoning ${ci}.${ti}`, thinkingSignature: `sig2 ${ci}.${ti}` });
      for (const c of made) content.push({ type: "toolCall", id: c.id, name: c.tool, arguments: c.args });
      message({ role: "assistant", content, stopReason: "toolUse", api: "openai-completions", provider: "mock", model: "m", timestamp: callTs } as AssistantMessage);
      made.forEach((c, k) => {
        if (turn.anomaly === "missing" && k === made.length - 1) return;
        if (turn.noticeBefore === k) append({ type: "custom_message", customType: "notice", content: `notice before ${c.id}`, display: true });
        c.resultTs = tick();
        message({ role: "toolResult", toolCallId: c.id, toolName: c.tool, content: [{ type: "text", text: c.text }], isError: c.isError, timestamp: c.resultTs });
      });
      if (turn.anomaly === "stray") message({ role: "toolResult", toolCallId: "call_99", toolName: "read", content: [{ type: "text", text: "stray" }], isError: false, timestamp: tick() });
      if (turn.anomaly === "duplicate") message({ role: "toolResult", toolCallId: made[0]!.id, toolName: made[0]!.tool, content: [{ type: "text", text: "again" }], isError: false, timestamp: tick() });
      const answered = made.filter((c) => c.resultTs > 0);
      chainCalls.push(...answered);
      let prunable = answered.filter((c) => !c.isProtected || turn.indexProtectedToo);
      if (turn.spillFirst && prunable.length) {
        spill(prunable[0]!);
        prunable = prunable.slice(1);
      }
      if (turn.summarize === "after-turn") indexAndSummarize(prunable, true);
      else if (turn.summarize === "at-chain-end") atChainEnd.push(prunable);
    });
    const closed = chainSpec.closed || !isLast;
    if (closed) {
      const finalTs = tick();
      boundary.finalTs = finalTs;
      const content: AssistantBlock[] = [];
      if (chainSpec.finalThinking) content.push({ type: "thinking", thinking: `final reasoning ${ci}`, thinkingSignature: `final sig ${ci}` });
      content.push({ type: "text", text: `done ${ci}` });
      message({ role: "assistant", content, stopReason: "stop", api: "openai-completions", provider: "mock", model: "m", timestamp: finalTs } as AssistantMessage);
    }
    for (const calls of atChainEnd) indexAndSummarize(calls, true);
    if (closed && chainSpec.turns.length && chainSpec.compress !== "no") {
      const dropped = chainCalls.filter((c) => !c.isProtected);
      const data: ChainData = {
        blockId: `b${++blockCount}`,
        startUserTimestamp: userTs,
        finalAssistantTimestamp: boundary.finalTs,
        droppedToolCallIds: dropped.map((c) => c.id),
        droppedOccurrenceKeys: dropped.map((c) => `${c.id}@${c.resultTs}`),
        toolRefs: [...new Set(dropped.map((c) => c.ref).filter((r): r is string => !!r))],
        compressedAt: clock,
      };
      if (chainSpec.compress !== "entry-without-protected-ids") data.protectedToolCallIds = chainCalls.filter((c) => c.isProtected).map((c) => c.id);
      if (chainSpec.compress === "entry-with-range-summary") data.rangeSummaryText = `fused summary of chain ${ci}`;
      append({ type: "custom", customType: "context-prune-chain", data });
    }
    if (chainSpec.noteAfter) append({ type: "custom_message", customType: "note", content: `note after ${ci}`, display: false });
    boundaries.push(boundary);
  });

  const closedOnes = boundaries.filter((b) => b.finalTs !== undefined);
  for (const kind of spec.bogus) {
    let data: ChainData | undefined;
    if (kind === "unknown-timestamps") data = { blockId: `b${++blockCount}`, startUserTimestamp: 42, finalAssistantTimestamp: 43 };
    else if (kind === "across-chains" && closedOnes.length >= 2) data = { blockId: `b${++blockCount}`, startUserTimestamp: closedOnes[0]!.userTs, finalAssistantTimestamp: closedOnes.at(-1)!.finalTs };
    else if (kind === "reversed" && closedOnes.length >= 2) data = { blockId: `b${++blockCount}`, startUserTimestamp: closedOnes.at(-1)!.userTs, finalAssistantTimestamp: closedOnes[0]!.finalTs };
    else if (kind === "final-calls-tools") {
      const withTools = boundaries.find((b) => b.toolAssistantTs.length);
      if (withTools) data = { blockId: `b${++blockCount}`, startUserTimestamp: withTools.userTs, finalAssistantTimestamp: withTools.toolAssistantTs.at(-1) };
    }
    if (data) append({ type: "custom", customType: "context-prune-chain", data });
  }
  return { entries, config: toConfig(spec.config) };
}

// ---------------------------------------------------------------------------------------------
// The independent checker

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: { type?: string; text?: string }) => (b && b.type === "text" && typeof b.text === "string" ? b.text : "")).join("\n");
}

/** Every tool call has exactly one result right after its assistant turn; no result without its call. */
function pairingProblem(out: readonly AgentMessage[]): string | undefined {
  for (let i = 0; i < out.length; i++) {
    const m = out[i]!;
    if (m.role === "toolResult") return `message ${i}: a tool result (${m.toolCallId}) that does not follow its call's assistant turn`;
    if (m.role !== "assistant") continue;
    const ids = m.content.filter((b) => b.type === "toolCall").map((b) => (b as { id: string }).id);
    const answered = new Set<string>();
    let j = i + 1;
    for (; j < out.length && out[j]!.role === "toolResult"; j++) {
      const r = out[j] as ToolResultMessage;
      if (!ids.includes(r.toolCallId)) return `message ${j}: result ${r.toolCallId} answers no call of the assistant turn at ${i}`;
      if (answered.has(r.toolCallId)) return `message ${j}: a second result for ${r.toolCallId}`;
      answered.add(r.toolCallId);
    }
    for (const id of ids) if (!answered.has(id)) return `message ${i}: call ${id} has no result right after its turn`;
    i = j - 1;
  }
  return undefined;
}

function thinkingOf(m: AssistantMessage): AssistantBlock[] {
  return m.content.filter((b) => b.type === "thinking");
}

/** A message's thinking is either all there, unchanged, or all gone; other blocks keep their order. */
function thinkingProblem(input: readonly AgentMessage[], out: readonly AgentMessage[]): string | undefined {
  const byTimestamp = new Map<number, AssistantMessage>();
  for (const m of input) if (m.role === "assistant") byTimestamp.set(m.timestamp, m);
  for (const m of out) {
    if (m.role !== "assistant") continue;
    const original = byTimestamp.get(m.timestamp);
    if (!original) return `an assistant message (${m.timestamp}) that is not in the input`;
    const kept = thinkingOf(m);
    if (kept.length && JSON.stringify(kept) !== JSON.stringify(thinkingOf(original))) return `assistant ${m.timestamp}: thinking changed in part`;
    const shape = (x: AssistantMessage) => x.content.filter((b) => b.type !== "thinking").map((b) => (b.type === "toolCall" ? `call:${b.id}` : `${b.type}:${(b as { text?: string }).text}`));
    if (JSON.stringify(shape(m)) !== JSON.stringify(shape(original))) return `assistant ${m.timestamp}: its text or calls changed`;
  }
  return undefined;
}

/** Protected results of the input (paired with their call by the checker's own rule) appear verbatim in the output. */
function protectedProblem(input: readonly AgentMessage[], out: readonly AgentMessage[]): string | undefined {
  const outResults = new Set<string>();
  const outText: string[] = [];
  for (const m of out) {
    if (m.role === "toolResult") outResults.add(`${m.toolCallId}\u0000${text(m.content)}`);
    else if (m.role === "user" || m.role === "custom") outText.push(text(m.content));
  }
  const blob = outText.join("\n");
  let turn: Map<string, { name: string; path: string }> | undefined;
  let answered = new Set<string>();
  for (const m of input) {
    if (m.role === "assistant") {
      turn = new Map(m.content.filter((b) => b.type === "toolCall").map((b) => [(b as { id: string }).id, { name: (b as { name: string }).name, path: String((b as { arguments: { path?: unknown } }).arguments.path ?? "") }]));
      answered = new Set();
    } else if (m.role === "toolResult") {
      const call = turn?.get(m.toolCallId);
      if (!call || answered.has(m.toolCallId)) continue;
      answered.add(m.toolCallId);
      if (!checkerProtects(call.name, call.path)) continue;
      const t = text(m.content);
      if (!outResults.has(`${m.toolCallId}\u0000${t}`) && !blob.includes(`<protected-output tool="${m.toolName}">${t}</protected-output>`)) return `protected output of ${m.toolCallId} (${t}) is missing`;
    } else if (m.role !== "custom") turn = undefined;
  }
  return undefined;
}

/** The open chain (after the newest user message, no text-only reply yet) reaches the model whole. */
function liveTurnProblem(input: readonly AgentMessage[], out: readonly AgentMessage[]): string | undefined {
  let lastUser = -1;
  input.forEach((m, i) => m.role === "user" && (lastUser = i));
  const turns = input.slice(lastUser + 1).filter((m): m is AssistantMessage => m.role === "assistant");
  if (turns.some((m) => !m.content.some((b) => b.type === "toolCall"))) return undefined;
  const live = turns.map((m) => m.timestamp);
  const seen = new Set(out.filter((m) => m.role === "assistant").map((m) => m.timestamp));
  const lost = live.filter((ts) => !seen.has(ts));
  return lost.length ? `live assistant turns lost: ${lost.join(", ")}` : undefined;
}

/** The render never drops a person's message, nor a reply (an assistant message that calls no tool). */
function conversationProblem(input: readonly AgentMessage[], out: readonly AgentMessage[]): string | undefined {
  const seen = out.filter((m) => m.role === "user").map((m) => `${m.timestamp}:${text(m.content)}`);
  for (const m of input) {
    if (m.role !== "user") continue;
    const at = seen.indexOf(`${m.timestamp}:${text(m.content)}`);
    if (at < 0) return `user message "${text(m.content)}" is missing`;
    seen.splice(at, 1);
  }
  const replies = new Set(out.filter((m) => m.role === "assistant").map((m) => m.timestamp));
  for (const m of input) {
    if (m.role === "assistant" && !m.content.some((b) => b.type === "toolCall") && !replies.has(m.timestamp)) return `reply ${m.timestamp} is missing`;
  }
  return undefined;
}

/**
 * Call arguments reach the model unchanged, except a failed call's: once `cooldownTurns` assistant
 * turns followed its turn and its JSON is at least `minArgChars` long, each of its strings longer
 * than the purge's bound is cut (see `purgedLike`); its keys and every other value stay.
 */
function argumentsProblem(input: readonly AgentMessage[], out: readonly AgentMessage[], config: PruneConfig): string | undefined {
  const failed = new Set<string>();
  let turn: AssistantMessage | undefined;
  for (const m of input) {
    if (m.role === "assistant") turn = m;
    else if (m.role === "toolResult") {
      if (turn && m.isError && turn.content.some((b) => b.type === "toolCall" && b.id === m.toolCallId)) failed.add(`${turn.timestamp}/${m.toolCallId}`);
    } else if (m.role !== "custom") turn = undefined;
  }
  const turnsAfter = new Map<number, number>();
  let count = 0;
  for (let i = input.length - 1; i >= 0; i--) {
    const m = input[i]!;
    if (m.role === "assistant") {
      turnsAfter.set(m.timestamp, count);
      count++;
    }
  }
  const originals = new Map<number, AssistantMessage>();
  for (const m of input) if (m.role === "assistant") originals.set(m.timestamp, m);
  for (const m of out) {
    if (m.role !== "assistant") continue;
    for (const block of m.content) {
      if (block.type !== "toolCall") continue;
      const original = originals.get(m.timestamp)?.content.find((b) => b.type === "toolCall" && b.id === block.id) as { arguments: unknown } | undefined;
      const originalJson = JSON.stringify(original?.arguments);
      const purge =
        config.purgeErrors.enabled &&
        failed.has(`${m.timestamp}/${block.id}`) &&
        (turnsAfter.get(m.timestamp) ?? 0) >= config.purgeErrors.cooldownTurns &&
        originalJson.length >= config.purgeErrors.minArgChars;
      const problem = purge ? purgedLike(original?.arguments, block.arguments) : JSON.stringify(block.arguments) === originalJson ? undefined : "changed";
      if (problem) return `assistant ${m.timestamp}, call ${block.id}: arguments ${JSON.stringify(block.arguments).slice(0, 60)} ${purge ? "are not a purge" : "changed"} of ${originalJson.slice(0, 60)}: ${problem}`;
    }
  }
  return undefined;
}

/**
 * Whether `purged` is `original` purged: the same keys and values, except that a string longer
 * than PURGE_STRING_BOUND is, within the bound, a start of it and a marker saying how many
 * characters followed that start. The generated arguments are flat.
 */
function purgedLike(original: unknown, purged: unknown): string | undefined {
  const from = original as Record<string, unknown>;
  const to = purged as Record<string, unknown>;
  if (JSON.stringify(Object.keys(from)) !== JSON.stringify(Object.keys(to))) return "other keys";
  for (const key of Object.keys(from)) {
    const was = from[key];
    const now = to[key];
    if (typeof was !== "string" || was.length <= PURGE_STRING_BOUND) {
      if (JSON.stringify(now) !== JSON.stringify(was)) return `${key} changed`;
      continue;
    }
    const cut = typeof now === "string" ? /^([\s\S]*)…<purged-errored-args cut="(\d+)"\/>$/.exec(now) : null;
    if (!cut || (now as string).length > PURGE_STRING_BOUND) return `${key} is not cut within the bound`;
    if (!was.startsWith(cut[1]!) || cut[1]!.length + Number(cut[2]) !== was.length) return `${key}: the cut does not say what was cut`;
  }
  return undefined;
}

function blockPlacementProblem(out: readonly AgentMessage[]): string | undefined {
  for (let i = 0; i < out.length; i++) {
    const m = out[i]!;
    if (m.role === "custom" && m.customType === "context-prune-chain" && out[i - 1]?.role !== "user") return `a compressed chain at ${i} does not follow a user message`;
  }
  return undefined;
}

function contextOf(entries: AnyEntry[]): AgentMessage[] {
  return buildPiContext(entries).map((c) => c.message);
}

/** How many checked renders exercised each step, so a generator that stopped reaching one fails. */
type Exercised = Record<"stubbed" | "spillStubs" | "purgedArgs" | "chainsCompressed" | "protectedRelocated" | "summariesSuppressed" | "orphansDropped" | "resultsReattached" | "resultsSynthesized" | "thinkingStripped" | "unresolvedChains", number>;
const RENDER_STEPS = ["stubbed", "purgedArgs", "chainsCompressed", "protectedRelocated", "summariesSuppressed", "orphansDropped", "resultsReattached", "resultsSynthesized", "thinkingStripped"] as const;

function noneExercised(): Exercised {
  return { stubbed: 0, spillStubs: 0, purgedArgs: 0, chainsCompressed: 0, protectedRelocated: 0, summariesSuppressed: 0, orphansDropped: 0, resultsReattached: 0, resultsSynthesized: 0, thinkingStripped: 0, unresolvedChains: 0 };
}

/** Each step was exercised by at least its share of `numRuns` renders. */
function expectExercised(exercised: Exercised, numRuns: number, shares: Partial<Record<keyof Exercised, number>>): void {
  const short = Object.entries(shares)
    .filter(([key, share]) => exercised[key as keyof Exercised] < Math.ceil(share! * numRuns))
    .map(([key, share]) => `${key}: ${exercised[key as keyof Exercised]} of ${numRuns} renders, at least ${Math.ceil(share! * numRuns)} expected`);
  expect(short, JSON.stringify(exercised)).toEqual([]);
}

/** Renders and checks every invariant; returns the problems found. */
function check(entries: AnyEntry[], config: PruneConfig, exercised: Exercised): string[] {
  const input = contextOf(entries);
  const before = JSON.stringify(input);
  const { index } = rebuildIndex(entries);
  const memo = createRenderMemo();
  const rendered = renderModelView(input, index, config, undefined, memo);
  const out = rendered.messages;
  for (const key of RENDER_STEPS) if (rendered.stats[key] > 0) exercised[key]++;
  if (rendered.stats.unresolvedChains.length > 0) exercised.unresolvedChains++;
  if (out.some((m) => m.role === "toolResult" && text(m.content).includes("spilled to disk"))) exercised.spillStubs++;
  const problems = [pairingProblem(out), thinkingProblem(input, out), protectedProblem(input, out), liveTurnProblem(input, out), blockPlacementProblem(out), conversationProblem(input, out), argumentsProblem(input, out, config)].filter(
    (p): p is string => !!p,
  );
  if (JSON.stringify(input) !== before) problems.push("the input was mutated");
  const bytes = JSON.stringify(out);
  if (JSON.stringify(renderModelView(input, index, config, undefined, memo).messages) !== bytes) problems.push("a second render gave other bytes");
  const clone = structuredClone(entries);
  if (JSON.stringify(renderModelView(contextOf(clone), rebuildIndex(clone).index, config).messages) !== bytes) problems.push("a rebuild from a copy of the session gave other bytes");
  return problems;
}

// ---------------------------------------------------------------------------------------------

const cases = { branches: 0, plannedBranches: 0, unchangedBranches: 0 };
const exercisedBy = { handWritten: noneExercised(), planned: noneExercised() };
const runs = (n: number) => Number(process.env.RENDER_PROPERTY_RUNS ?? n);

afterAll(() => {
  const total = cases.branches + cases.plannedBranches + cases.unchangedBranches;
  console.log(`render properties: ${total} generated branches (${cases.branches} with hand-written pruner entries, ${cases.plannedBranches} compressed by the planner, ${cases.unchangedBranches} with nothing to change)`);
  console.log(`renders that exercised each step: ${JSON.stringify(exercisedBy)}`);
});

describe("render invariants over generated branches", () => {
  it("every call answered once right after its turn, thinking whole, protected output verbatim, live turns kept, byte-stable", () => {
    const numRuns = runs(2500);
    fc.assert(
      fc.property(branchArb, (spec) => {
        cases.branches++;
        const { entries, config } = materialize(spec);
        expect(check(entries, config, exercisedBy.handWritten)).toEqual([]);
      }),
      { numRuns },
    );
    expect(cases.branches).toBe(numRuns);
    // The branches really hold what the header promises (a typical run reaches about 1.6 times these shares).
    expectExercised(exercisedBy.handWritten, numRuns, {
      stubbed: 0.5,
      spillStubs: 0.2,
      purgedArgs: 0.15,
      chainsCompressed: 0.4,
      protectedRelocated: 0.35,
      summariesSuppressed: 0.25,
      orphansDropped: 0.3,
      resultsReattached: 0.45,
      resultsSynthesized: 0.2,
      thinkingStripped: 0.2,
      unresolvedChains: 0.2,
    });
  });

  it("the same holds after the pruner's own planner compressed the chains beyond a random window", async () => {
    const fuser: Summarizer = async (request) => ({ text: `- fused ${request.prompt.length}` });
    const numRuns = runs(1000);
    await fc.assert(
      fc.asyncProperty(branchArb, fc.integer({ min: 0, max: 3 }), fc.boolean(), async (spec, window, all) => {
        cases.plannedBranches++;
        // Only the pruner's planner writes chain entries here.
        const withoutChains = { ...spec, chains: spec.chains.map((c) => ({ ...c, compress: "no" as const })), bogus: [] };
        const { entries, config } = materialize(withoutChains);
        const planConfig = { ...config, chainCompression: { ...config.chainCompression, rollingWindow: window } };
        const { index } = rebuildIndex(entries);
        const result = await compressChains(contextOf(entries), index, planConfig, fuser, { all, now: 0 });
        let parent = entries[entries.length - 1]!.id;
        result.entries.forEach((e, i) => {
          const id = `planned${i}`;
          entries.push({ type: "custom", customType: e.customType, data: (e as { data: unknown }).data, id, parentId: parent, timestamp: new Date(0).toISOString() } as AnyEntry);
          parent = id;
        });
        expect(check(entries, config, exercisedBy.planned)).toEqual([]);
        // Every call of a compressed chain is recoverable: it has a ref in the index.
        const rebuilt = rebuildIndex(entries).index;
        for (const chain of result.chains) for (const ref of chain.toolRefs ?? []) expect(rebuilt.byShortRef.has(ref)).toBe(true);
      }),
      { numRuns },
    );
    expect(cases.plannedBranches).toBe(numRuns);
    expectExercised(exercisedBy.planned, numRuns, { stubbed: 0.5, chainsCompressed: 0.4, protectedRelocated: 0.35, summariesSuppressed: 0.25, orphansDropped: 0.2, purgedArgs: 0.15, thinkingStripped: 0.15 });
  });

  it("nothing to change gives back the very same array", () => {
    const wellFormedTurn = turnArb.map((t) => ({ ...t, anomaly: "none", noticeBefore: null, summarize: "none", spillFirst: false, calls: t.calls.map((c) => ({ ...c, isError: false })) }));
    const calmChain = chainArb.map((c) => ({ ...c, compress: "no" as const }));
    const calm = fc.record({
      chains: fc.array(fc.record({ turns: fc.array(wellFormedTurn, { maxLength: 3 }), base: calmChain }).map(({ turns, base }) => ({ ...base, turns })), { minLength: 1, maxLength: 5 }),
      bogus: fc.array(fc.constant("unknown-timestamps"), { maxLength: 2 }),
      duplicateUserTimestamp: fc.constant(false),
      config: configArb.map((c) => ({ ...c, thinkingStrip: false })),
    });
    fc.assert(
      fc.property(calm, (spec) => {
        cases.unchangedBranches++;
        const { entries, config } = materialize(spec as BranchSpec);
        const input = contextOf(entries);
        expect(renderModelView(input, rebuildIndex(entries).index, config).messages).toBe(input);
      }),
      { numRuns: runs(1000) },
    );
    expect(cases.unchangedBranches).toBe(runs(1000));
  });
});
