// Property test of the agent's self-control through the whole render: generated sessions with
// tool turns, prompts, flushes, checkpoints, and rewinds, shrinks and cancels written at random
// points by three writers (our tools; pi-mulligan, which names a note's rewind by entry id and
// gives cancels no reason; an older pi-mulligan, which pinned no entry ids at all).
//
// The generator keeps its own model of what the agent sees and decides every span and target on
// it, from the rules stated here, not from core's code:
// - a unit is an assistant turn with its results, or one other message; units go whole;
// - last_tool_call_group hides the newest shown tool turn but the rewind's own; last_turn the
//   shown assistant turns after the newest shown prompt, the rewind's own excepted; checkpoint
//   everything shown after the checkpoint's reply but notes, the rewind's own turn and the first
//   prompt;
// - a cancelled or stale marker no longer applies; a cancel of a missing or retired one does nothing;
// - a turn holding protected output stays shown; a protected result is never shrunk;
// - a pruner summary follows its results: it stays while one of them is shown, and leaves when it
//   lies in a rewound span or a rewind hid its results;
// - a shrink by call id takes the newest shown result of that id, by tool name the first or last
//   shown result of that tool, by content the first shown message holding the text (as shown);
//   of two shrinks of one message the newer shows.
// The render must then send exactly the shown messages, in order, each as the model says (the
// shrink's replacement, the pruner's stub, or as written), paired for the provider, and the same
// bytes twice.
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { echoSummarizer, persist } from "../../helpers/prune-session.ts";
import { MulliganMarkers } from "../../helpers/mulligan-sessions.ts";
import { pairingProblem } from "../../helpers/provider-pairing.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches, type Batch } from "../../../core/src/prune/flush.ts";
import { rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { createRenderMemo, renderModelView } from "../../../core/src/render/render.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import type { AnyEntry } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";

// ---------------------------------------------------------------------------------------------
// Specs

const writerArb = fc.constantFrom("ours", "mulligan", "old-mulligan");
const callArb = fc.record({ tool: fc.constantFrom("read", "bash", "todo"), big: fc.boolean() });
const stepArb = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("tools" as const), calls: fc.array(callArb, { minLength: 1, maxLength: 3 }), ids: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 3, maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("rewind" as const), granularity: fc.constantFrom("last_tool_call_group", "last_turn", "checkpoint"), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("shrink" as const),
      by: fc.constantFrom("call-id", "first", "last", "content", "content-of-replacement", "content-missing", "content-empty"),
      tool: fc.constantFrom("read", "bash", "todo"),
      pick: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat(), missing: fc.integer({ min: 0, max: 4 }).map((n) => n === 0), reason: fc.constantFrom("agent", "person", "stale", "cap") }) },
);
const chainArb = fc.record({ steps: fc.array(stepArb, { maxLength: 6 }), flush: fc.boolean(), checkpoint: fc.boolean() });
const sessionArb = fc.record({
  writer: writerArb,
  chains: fc.array(chainArb, { minLength: 1, maxLength: 4 }),
  prunerEnabled: fc.integer({ min: 0, max: 3 }).map((n) => n !== 0),
  selfControlEnabled: fc.integer({ min: 0, max: 9 }).map((n) => n !== 0),
});
type SessionSpec = typeof sessionArb extends fc.Arbitrary<infer T> ? T : never;

// ---------------------------------------------------------------------------------------------
// The generator's model

interface Unit {
  kind: "user" | "turn" | "reply" | "note" | "summary";
  items: Item[];
  /** A turn holding protected output. */
  protected: boolean;
  /** Rewinds whose span holds this unit. */
  rewoundBy: Set<string>;
  /** A summary's results. */
  results?: Item[];
  firstUser?: boolean;
}

interface Item {
  entryId: string;
  identity: string;
  role: AgentMessage["role"];
  unit: Unit;
  /** What a content search sees, as written. */
  text: string;
  toolName?: string;
  callId?: string;
  /** A protected result: never shrunk. */
  protected?: boolean;
  summarized?: boolean;
}

interface ModelShrink {
  id: string;
  seq: number;
  target: Item | undefined;
  replacement: string;
  active: boolean;
}

/**
 * A summary follows its results: shown while one of them is; gone when it lies in a rewound span
 * or names a result a rewind hid, and none of its results is shown.
 */
function summaryShown(unit: Unit, activeRewind: (id: string) => boolean): boolean {
  const turnShown = (u: Unit) => u.protected || ![...u.rewoundBy].some(activeRewind);
  const results = unit.results!;
  if (results.some((r) => turnShown(r.unit))) return true;
  return ![...unit.rewoundBy].some(activeRewind) && !results.some((r) => !turnShown(r.unit));
}

const wrapped = (replacement: string) => `<context-shrunk>\n${replacement}\n</context-shrunk>`;

function identityOf(message: AgentMessage): string {
  const id = message.role === "toolResult" ? message.toolCallId : message.role === "custom" ? message.customType : "";
  return `${message.role}|${message.timestamp}|${id}`;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b: { type?: string }) => b?.type === "text").map((b: { text: string }) => b.text).join("\n");
}

interface Built {
  entries: AnyEntry[];
  config: PruneConfig;
  units: Unit[];
  rewinds: Map<string, { active: boolean; note?: Item }>;
  shrinks: ModelShrink[];
  counts: { pinnedRewinds: number; unpinnedRewinds: number; shrinks: number; cancels: number; summariesInSpans: number };
}

async function build(spec: SessionSpec): Promise<Built> {
  const writer = spec.writer;
  const pinned = writer !== "old-mulligan";
  const protectedTools = writer === "ours" ? ["todo"] : [];
  const config: PruneConfig = {
    ...DEFAULT_CONFIG,
    enabled: spec.prunerEnabled,
    cacheAware: false,
    protectedTools,
    protectedPaths: [],
    chainCompression: { ...DEFAULT_CONFIG.chainCompression, enabled: false },
    selfControl: { ...DEFAULT_CONFIG.selfControl, enabled: spec.selfControlEnabled },
  };
  const b = new SessionBuilder();
  const markers = new MulliganMarkers(b);
  const units: Unit[] = [];
  const rewinds = new Map<string, { active: boolean; note?: Item }>();
  const shrinks: ModelShrink[] = [];
  const checkpoints: { name: string; anchor: Item; labelTarget: string; used: boolean }[] = [];
  const markerIds: string[] = [];
  const counts = { pinnedRewinds: 0, unpinnedRewinds: 0, shrinks: 0, cancels: 0, summariesInSpans: 0 };
  let pending: { unit: Unit; assistant: AssistantMessage; results: ToolResultMessage[] }[] = [];
  let outputs = 0;
  let replacements = 0;
  let serial = 0;

  const lastMessage = (): AgentMessage => {
    const entry = b.entries[b.entries.length - 1]!;
    if (entry.type === "message") return (entry as { message: AgentMessage }).message;
    const e = entry as unknown as { customType: string; content: string; timestamp: string };
    return { role: "custom", customType: e.customType, content: e.content, display: false, timestamp: Date.parse(e.timestamp) };
  };
  const item = (unit: Unit, extra: Partial<Item> = {}): Item => {
    const message = lastMessage();
    const it: Item = { entryId: b.lastId, identity: identityOf(message), role: message.role, unit, text: textOf((message as { content?: unknown }).content), ...extra };
    unit.items.push(it);
    return it;
  };
  const newUnit = (kind: Unit["kind"]): Unit => {
    const unit: Unit = { kind, items: [], protected: false, rewoundBy: new Set() };
    units.push(unit);
    return unit;
  };

  // What the agent sees now.
  const activeRewind = (id: string) => rewinds.get(id)?.active === true;
  const turnShown = (unit: Unit) => unit.protected || ![...unit.rewoundBy].some(activeRewind);
  const shown = (unit: Unit): boolean => (unit.kind === "summary" ? summaryShown(unit, activeRewind) : turnShown(unit));
  const shrinkOf = (it: Item): ModelShrink | undefined => {
    if (it.protected) return undefined;
    let found: ModelShrink | undefined;
    for (const s of shrinks) if (s.active && s.target === it && (!found || s.seq > found.seq)) found = s;
    return found;
  };
  const shownText = (it: Item) => {
    const s = shrinkOf(it);
    return s ? wrapped(s.replacement) : it.text;
  };
  const shownUnits = () => units.filter(shown);
  const shownItems = () => shownUnits().flatMap((u) => u.items);

  const controlTurn = (name: string, args: Record<string, unknown>) => {
    const unit = newUnit("turn");
    const id = `ctl${++serial}`;
    b.assistant({ toolCalls: [{ name, args, id }] });
    item(unit);
    return { unit, id, result: (text: string) => (b.toolResult(id, name, text), item(unit, { toolName: name, callId: id })) };
  };

  const span = (granularity: string, own: Unit, anchor?: Item): Unit[] => {
    const visible = shownUnits().filter((u) => u !== own);
    if (granularity === "last_tool_call_group") {
      const turn = visible.filter((u) => u.kind === "turn").at(-1);
      return turn ? [turn] : [];
    }
    if (granularity === "last_turn") {
      const lastUser = visible.map((u) => u.kind).lastIndexOf("user");
      if (lastUser < 0) return [];
      return visible.slice(lastUser + 1).filter((u) => u.kind === "turn" || u.kind === "reply");
    }
    const at = visible.indexOf(anchor!.unit);
    if (at < 0) return [];
    return visible.slice(at + 1).filter((u) => u.kind !== "note" && !u.firstUser);
  };

  const step = (s: SessionSpec["chains"][number]["steps"][number]) => {
    if (s.kind === "tools") {
      const unit = newUnit("turn");
      const ids = s.calls.map((_, k) => `call_${s.ids[k]}`);
      b.assistant({ toolCalls: s.calls.map((c, k) => ({ name: c.tool, args: { path: `src/${c.tool}-${outputs + k}.ts` }, id: ids[k] })) });
      const assistantMessage = lastMessage() as AssistantMessage;
      item(unit);
      const results: ToolResultMessage[] = [];
      s.calls.forEach((c, k) => {
        const token = `[out-${++outputs}]`;
        b.toolResult(ids[k]!, c.tool, c.big ? `${token}\n${"x".repeat(1200)}\n${outputs}` : `${token} small`);
        results.push(lastMessage() as ToolResultMessage);
        const isProtected = protectedTools.includes(c.tool);
        item(unit, { toolName: c.tool, callId: ids[k], protected: isProtected });
        if (isProtected) unit.protected = true;
      });
      pending.push({ unit, assistant: assistantMessage, results });
      return;
    }
    if (s.kind === "rewind") {
      const turn = controlTurn("context_rewind", { granularity: s.granularity });
      const open = checkpoints.filter((c) => !c.used);
      const checkpoint = s.granularity === "checkpoint" ? open[s.pick % Math.max(1, open.length)] : undefined;
      const chosen = s.granularity === "checkpoint" && !checkpoint ? [] : span(s.granularity, turn.unit, checkpoint?.anchor);
      if (chosen.length === 0) {
        turn.result("refused: nothing to rewind");
        return;
      }
      const id = `rewind-${++serial}`;
      const hideEntryIds = chosen.flatMap((u) => u.items.map((i) => i.entryId));
      const markerEntry = markers.rewind({
        id,
        granularity: s.granularity,
        excludeToolCallId: turn.id,
        ...(pinned ? { hideEntryIds } : {}),
        ...(checkpoint ? { checkpoint: checkpoint.name } : {}),
      });
      for (const u of chosen) {
        u.rewoundBy.add(id);
        if (u.kind === "summary") counts.summariesInSpans++;
      }
      rewinds.set(id, { active: true });
      markerIds.push(id);
      if (pinned) counts.pinnedRewinds++;
      else counts.unpinnedRewinds++;
      turn.result(`rewound ${hideEntryIds.length} entries`);
      const noteUnit = newUnit("note");
      markers.note(writer === "ours" ? id : markerEntry, `note for ${id}`);
      rewinds.get(id)!.note = item(noteUnit);
      if (checkpoint && writer === "old-mulligan") {
        // pi-mulligan consumes the checkpoint it went back to.
        b.label(checkpoint.labelTarget, undefined);
        checkpoint.used = true;
      }
      return;
    }
    if (s.kind === "shrink") {
      const visible = shownItems();
      const results = visible.filter((i) => i.role === "toolResult");
      let target: Record<string, unknown>;
      let found: Item | undefined;
      if (s.by === "call-id") {
        const all = units.flatMap((u) => u.items).filter((i) => i.role === "toolResult" && i.callId?.startsWith("call_"));
        const callId = all.length ? all[s.pick % all.length]!.callId! : "call_9";
        target = { by_tool_call_id: callId };
        found = results.filter((i) => i.callId === callId).at(-1);
      } else if (s.by === "first" || s.by === "last") {
        target = { by_tool_name: s.tool, occurrence: s.by };
        const ofTool = results.filter((i) => i.toolName === s.tool);
        found = s.by === "first" ? ofTool[0] : ofTool.at(-1);
      } else {
        let needle = "";
        if (s.by === "content") needle = `[out-${1 + (s.pick % Math.max(1, outputs))}]`;
        else if (s.by === "content-of-replacement") needle = `[rep-${1 + (s.pick % Math.max(1, replacements))}]`;
        else if (s.by === "content-missing") needle = "[nowhere]";
        target = { by_content_includes: needle };
        found = needle === "" ? undefined : visible.find((i) => shownText(i).includes(needle));
      }
      // Our tool refuses a target that names nothing; pi-mulligan writes the marker all the same.
      if (!found && writer === "ours") return;
      const turn = controlTurn("context_shrink", { target });
      const replacement = `[rep-${++replacements}] shorter`;
      const id = `shrink-${++serial}`;
      markers.shrink({ id, target, replacement, ...(pinned && found ? { pinnedEntryId: found.entryId } : {}) });
      shrinks.push({ id, seq: markers.seq, target: found, replacement, active: true });
      markerIds.push(id);
      counts.shrinks++;
      turn.result(found ? "shrunk" : "nothing matched");
      return;
    }
    const id = s.missing || markerIds.length === 0 ? "no-such-marker" : markerIds[s.pick % markerIds.length]!;
    const turn = controlTurn("context_cancel", { markerId: id });
    markers.cancel(id, writer === "ours" ? s.reason : undefined);
    const rewind = rewinds.get(id);
    if (rewind) rewind.active = false;
    const shrink = shrinks.find((x) => x.id === id);
    if (shrink) shrink.active = false;
    counts.cancels++;
    turn.result("cancelled");
  };

  /** The live runtime's flush at a final reply: without what active markers took, protected calls never captured. */
  const flush = async () => {
    const inSpan = (unit: Unit) => [...unit.rewoundBy].some(activeRewind);
    const taken = new Set(shrinks.filter((s) => s.active && s.target).map((s) => s.target!.identity));
    const batches: Batch[] = [];
    for (const p of pending) {
      if (inSpan(p.unit)) continue;
      const results = p.results.filter((r) => !taken.has(identityOf(r)));
      if (results.length === 0) continue;
      const { batch } = captureBatch(p.assistant, results, 1, config);
      if (batch) batches.push(batch);
    }
    pending = [];
    if (batches.length === 0) return;
    const flushed = await flushBatches(batches, rebuildIndex(b.entries).index, config, echoSummarizer);
    for (const entry of flushed.entries) {
      persist(b, [entry]);
      if (entry.kind !== "message") continue;
      const refs = ((entry.details as { toolCallRefs?: { toolCallId: string; resultTimestamp: number }[] }).toolCallRefs ?? []).map((r) => `toolResult|${r.resultTimestamp}|${r.toolCallId}`);
      const named = units.flatMap((u) => u.items).filter((i) => refs.includes(i.identity));
      for (const r of named) r.summarized = true;
      const unit = newUnit("summary");
      unit.results = named;
      item(unit);
    }
  };

  for (const [n, chain] of spec.chains.entries()) {
    b.user(`prompt ${n}`);
    const unit = newUnit("user");
    unit.firstUser = n === 0;
    item(unit);
    for (const s of chain.steps) step(s);
    b.assistant(`done ${n}`);
    const reply = item(newUnit("reply"));
    if (chain.flush) await flush();
    if (chain.checkpoint) {
      const name = `cp-${n}`;
      b.label(reply.entryId, `mulligan:checkpoint:${name}`);
      checkpoints.push({ name, anchor: reply, labelTarget: reply.entryId, used: false });
    }
  }
  return { entries: b.entries, config, units, rewinds, shrinks, counts };
}

// ---------------------------------------------------------------------------------------------
// The check

const exercised = { sessions: 0, rewound: 0, shrunk: 0, unpinned: 0, cancels: 0, keptProtected: 0, summariesInSpans: 0, stubbed: 0, prunerOff: 0 };

async function check(spec: SessionSpec): Promise<string[]> {
  const built = await build(spec);
  const { entries, config, units } = built;
  const input = buildPiContext(entries).map((c) => c.message);
  const before = JSON.stringify(input);
  const controls = readControls(entries);
  const index = rebuildIndex(entries).index;
  const memo = createRenderMemo();
  const rendered = renderModelView(input, index, config, controls, memo);
  const out = rendered.messages;
  const problems: string[] = [];
  const pairing = pairingProblem(out);
  if (pairing) problems.push(pairing);

  // The model's view, item by item.
  const activeRewind = (id: string) => spec.selfControlEnabled && built.rewinds.get(id)?.active === true;
  const turnShown = (unit: Unit) => unit.protected || ![...unit.rewoundBy].some(activeRewind);
  const shown = (unit: Unit) => (unit.kind === "summary" ? summaryShown(unit, activeRewind) : turnShown(unit));
  const shrinkOf = (it: Item) => {
    if (!spec.selfControlEnabled || it.protected) return undefined;
    let found: ModelShrink | undefined;
    for (const s of built.shrinks) if (s.active && s.target === it && (!found || s.seq > found.seq)) found = s;
    return found;
  };
  const expected = units.filter(shown).flatMap((u) => u.items);
  const got = out.map(identityOf);
  const want = expected.map((i) => i.identity);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    const missing = want.filter((w) => !got.includes(w));
    const extra = got.filter((g) => !want.includes(g));
    problems.push(`sent ${got.length} messages where ${want.length} were due; missing ${missing.slice(0, 4).join(", ")}; not due ${extra.slice(0, 4).join(", ")}`);
  } else {
    expected.forEach((it, k) => {
      const text = textOf((out[k] as { content?: unknown }).content);
      const shrink = shrinkOf(it);
      if (shrink) {
        if (text !== wrapped(shrink.replacement)) problems.push(`${it.identity}: ${JSON.stringify(text.slice(0, 60))} where the shrink's replacement was due`);
      } else if (it.role === "toolResult" && it.summarized && config.enabled) {
        if (!/pruned: see ref `t\d+`/.test(text)) problems.push(`${it.identity}: summarized but sent as ${JSON.stringify(text.slice(0, 60))}`);
      } else if (text !== it.text) problems.push(`${it.identity}: changed to ${JSON.stringify(text.slice(0, 60))}`);
    });
  }
  for (const [id, rewind] of built.rewinds) if (rewind.note && !got.includes(rewind.note.identity)) problems.push(`the note of ${id} is not sent`);
  if (config.enabled && rendered.stats.orphansDropped + rendered.stats.resultsReattached + rendered.stats.resultsSynthesized > 0) problems.push(`the orphan sweep had to repair what self-control sent: ${JSON.stringify(rendered.stats)}`);
  if (JSON.stringify(input) !== before) problems.push("the input was changed");
  const bytes = JSON.stringify(out);
  // Pi hands over a fresh copy of the same messages on every request.
  if (JSON.stringify(renderModelView(structuredClone(input), index, config, controls, memo).messages) !== bytes) problems.push("a second render gave other bytes");
  const clone = structuredClone(entries);
  const again = renderModelView(buildPiContext(clone).map((c) => c.message), rebuildIndex(clone).index, config, readControls(clone)).messages;
  if (JSON.stringify(again) !== bytes) problems.push("the same session read again gave other bytes");

  exercised.sessions++;
  if (rendered.stats.rewoundMessages > 0) exercised.rewound++;
  if (rendered.stats.shrunkMessages > 0) exercised.shrunk++;
  if (rendered.stats.rewindKeptProtected > 0) exercised.keptProtected++;
  if (rendered.stats.stubbed > 0) exercised.stubbed++;
  if (built.counts.unpinnedRewinds > 0 && spec.selfControlEnabled) exercised.unpinned++;
  if (built.counts.cancels > 0) exercised.cancels++;
  if (built.counts.summariesInSpans > 0) exercised.summariesInSpans++;
  if (!config.enabled) exercised.prunerOff++;
  return problems;
}

const runs = Number(process.env.SELF_CONTROL_PROPERTY_RUNS ?? 600);

afterAll(() => {
  console.log(`self-control properties: ${JSON.stringify(exercised)}`);
});

describe("self-control through the render, over generated sessions", () => {
  it("sends exactly what the agent's markers leave, each message as they say, paired, the same bytes every time", async () => {
    await fc.assert(
      fc.asyncProperty(sessionArb, async (spec) => {
        expect(await check(spec)).toEqual([]);
      }),
      { numRuns: runs },
    );
    // The sessions really hold what the header promises (a typical run reaches about twice these shares).
    const share = (n: number) => n / exercised.sessions;
    expect(share(exercised.rewound)).toBeGreaterThan(0.3);
    expect(share(exercised.shrunk)).toBeGreaterThan(0.2);
    expect(share(exercised.unpinned)).toBeGreaterThan(0.1);
    expect(share(exercised.cancels)).toBeGreaterThan(0.2);
    expect(share(exercised.keptProtected)).toBeGreaterThan(0.02);
    expect(share(exercised.summariesInSpans)).toBeGreaterThan(0.01);
    expect(share(exercised.stubbed)).toBeGreaterThan(0.2);
    expect(share(exercised.prunerOff)).toBeGreaterThan(0.1);
  });
});
