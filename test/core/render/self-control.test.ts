// Step 0 of the render, the agent's own rewinds and shrinks, together with everything the pruner
// does after it: a real prune index rebuilt from the branch, flushes that leave out what a marker
// took (as the live runtime does), chain compression planned on the context the agent sees.
//
// What must hold, case by case:
// - a rewound span inside a closed chain that is later compressed: the block names none of its
//   calls, the model gets none of its output, the rewind's note stays;
// - a shrink of a result the pruner summarized: the agent's replacement is sent, not the stub;
// - a rewind of a context_tree_query call: the recovered output leaves, the result's stub stays;
// - a chain compressed after a checkpoint rewind: the hidden chain gets no block, no record and no
//   ref, and nothing is reported as unresolved;
// - Pi's compaction over a hidden span: those messages are gone anyway, the render goes on;
// - protected output inside a rewound span stays with its unit; a shrink of it is not applied;
// - selfControl.enabled false: the markers change nothing;
// - the pruner's enabled false with selfControl on: rewinds and shrinks still apply.
// Every render is checked for pairing by an independent checker.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, persist, piContext } from "../../helpers/prune-session.ts";
import { MulliganMarkers, MULLIGAN_STORY_TEXT, mulliganSessionOnPi084, mulliganSessionOnPi16 } from "../../helpers/mulligan-sessions.ts";
import { pairingProblem } from "../../helpers/provider-pairing.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches, type Batch } from "../../../core/src/prune/flush.ts";
import { compressChains } from "../../../core/src/prune/chain-plan.ts";
import { rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { renderModelView, renderWhole, type RenderConfig } from "../../../core/src/render/render.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { resolveRewindSpan, resolveShrinkTarget, shrunkText, visibleContext } from "../../../core/src/control/spans.ts";
import { messageKey, type ControlState, type Granularity, type ShrinkTarget } from "../../../core/src/control/control-entries.ts";
import { isProtected } from "../../../core/src/settings/protection.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import { QUERY_TOOL } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: [], protectedPaths: [...DEFAULT_CONFIG.protectedPaths], cacheAware: false };

interface Call {
  name: string;
  args?: Record<string, unknown>;
  result: string;
}

/**
 * A session played as the live extension plays it: tool turns captured, a flush at each final
 * reply (without the calls the markers took), markers written the way the tools write them
 * (resolved on the visible context, pinned by entry id), chains compressed on the visible context.
 */
class Play {
  readonly b = new SessionBuilder();
  readonly markers = new MulliganMarkers(this.b);
  private pending: Batch[] = [];
  private calls = 0;
  private readonly settings: PruneConfig;

  constructor(settings: PruneConfig = config) {
    this.settings = settings;
  }

  controls(): ControlState {
    return readControls(this.b.entries);
  }

  /** What the agent sees now: Pi's context with the markers applied, as the runtime's contextMessagesOf builds it. */
  visible() {
    return visibleContext(buildPiContext(this.b.entries), this.controls(), (tool, args) => isProtected(tool, args, this.settings));
  }

  user(text: string): this {
    this.b.user(text);
    return this;
  }

  /** One assistant turn calling `calls`, and their results; returns the call ids. */
  turn(calls: Call[]): string[] {
    const ids = calls.map(() => `c${++this.calls}`);
    this.b.assistant({ toolCalls: calls.map((c, i) => ({ name: c.name, args: c.args ?? {}, id: ids[i] })) });
    calls.forEach((c, i) => this.b.toolResult(ids[i]!, c.name, c.result));
    const messages = piContext(this.b);
    const results = messages.slice(-calls.length) as ToolResultMessage[];
    const { batch } = captureBatch(messages[messages.length - calls.length - 1] as AssistantMessage, results, 1, this.settings);
    if (batch) this.pending.push(batch);
    return ids;
  }

  /** The final reply and the flush it triggers, without what a rewind hid or a shrink replaced. */
  async final(text: string): Promise<void> {
    this.b.assistant(text);
    const controls = this.controls();
    const gone = new Set<string>();
    for (const m of controls.markers) {
      if (m.state !== "active") continue;
      if (m.kind === "rewind") for (const key of m.hidden) gone.add(key);
      else if (m.targetKey) gone.add(m.targetKey);
    }
    const resultKey = (c: { toolCallId: string; resultTimestamp: number }) => messageKey({ role: "toolResult", toolCallId: c.toolCallId, timestamp: c.resultTimestamp } as AgentMessage);
    const batches = this.pending.map((batch) => ({ ...batch, calls: batch.calls.filter((c) => !gone.has(resultKey(c))) })).filter((batch) => batch.calls.length > 0);
    this.pending = [];
    if (batches.length === 0) return;
    const flushed = await flushBatches(batches, rebuildIndex(this.b.entries).index, this.settings, echoSummarizer);
    persist(this.b, flushed.entries);
  }

  /** The agent's rewind: its own turn, the marker pinned to what the span holds on the visible context, the result, the note. */
  rewind(granularity: Granularity, options: { checkpoint?: string; checkpointEntryId?: string } = {}): string[] {
    const id = `rw${++this.calls}`;
    this.b.assistant({ toolCalls: [{ name: "context_rewind", args: { granularity }, id }] });
    const span = resolveRewindSpan(this.visible(), { granularity, excludeToolCallId: id, checkpointEntryId: options.checkpointEntryId });
    if (!span.ok) throw new Error(`rewind refused: ${span.reason}`);
    const marker = this.markers.rewind({ id: `rewind-${id}`, granularity, excludeToolCallId: id, hideEntryIds: span.entryIds, ...(options.checkpoint ? { checkpoint: options.checkpoint } : {}) });
    this.b.toolResult(id, "context_rewind", `rewound ${span.entryIds.length} entries`);
    this.markers.note(marker, `Rewind note ${id}: what happened, the true state, what next.`);
    return span.entryIds;
  }

  shrink(target: ShrinkTarget, replacement: string): void {
    const id = `sh${++this.calls}`;
    this.b.assistant({ toolCalls: [{ name: "context_shrink", args: { target, replacement }, id }] });
    const found = resolveShrinkTarget(this.visible(), target);
    this.markers.shrink({ id: `shrink-${id}`, target, replacement, ...(found ? { pinnedEntryId: found.entryId } : {}) });
    this.b.toolResult(id, "context_shrink", found ? "shrunk" : "nothing matched");
  }

  /** Chain compression as the runtime plans it: on the context the agent sees. */
  async compress(rollingWindow = 3): Promise<void> {
    const plan = { ...this.settings, chainCompression: { ...this.settings.chainCompression, rollingWindow } };
    const result = await compressChains(this.visible().map((c) => c.message), rebuildIndex(this.b.entries).index, plan, echoSummarizer, { now: 1 });
    persist(this.b, result.entries);
  }

  render(settings: RenderConfig = this.settings) {
    const input = piContext(this.b);
    const rendered = renderModelView(input, rebuildIndex(this.b.entries).index, settings, this.controls());
    expect(pairingProblem(rendered.messages)).toBeUndefined();
    return { input, ...rendered, text: JSON.stringify(rendered.messages) };
  }
}

const resultText = (messages: readonly AgentMessage[], callId: string) => {
  const found = messages.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === callId);
  return found ? contentText(found.content) : undefined;
};
const callIdsOf = (messages: readonly AgentMessage[]) => messages.flatMap((m) => (m.role === "assistant" ? m.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : [])) : []));
const blocksOf = (messages: readonly AgentMessage[]) => messages.filter((m) => m.role === "custom" && m.customType === "context-prune-chain").map((m) => contentText((m as { content: string }).content));
const notesOf = (messages: readonly AgentMessage[]) => messages.filter((m) => m.role === "custom" && m.customType === "mulligan:note");

/** Three closed chains that each read one file: enough to push an older chain out of the rolling window. */
async function laterChains(play: Play, from = 2, to = 4): Promise<void> {
  for (let n = from; n <= to; n++) {
    play.user(`chain ${n}`);
    play.turn([{ name: "read", args: { path: `src/${n}.ts` }, result: big(`file ${n}`) }]);
    await play.final(`chain ${n} done`);
  }
}

describe("self-control with the pruner", () => {
  it("a rewound span inside a closed chain that is then compressed: the block names none of its calls, its output is gone, the note stays", async () => {
    const play = new Play();
    play.user("one");
    const [readA] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: big("A") }]);
    const [wrong] = play.turn([{ name: "bash", args: { command: "find / -name '*.log'" }, result: big("ENORMOUS LISTING", 3000) }]);
    play.rewind("last_tool_call_group");
    await play.final("one done");
    await laterChains(play);
    await play.compress();

    const { messages, stats, text } = play.render();
    const [block] = blocksOf(messages);
    const index = rebuildIndex(play.b.entries).index;
    const refOf = (callId: string) => [...index.calls.values()].find((c) => c.record.toolCallId === callId)?.shortRef;
    // The block covers the read and the rewind's own call; the hidden bash has no ref and no line.
    expect(/tools="([^"]*)"/.exec(block!)?.[1]?.split(",")).toEqual([refOf(readA!), expect.stringMatching(/^t\d+$/)]);
    expect(block).toContain("context_rewind");
    expect(block).not.toContain("bash");
    expect(text).not.toContain("ENORMOUS LISTING");
    expect(callIdsOf(messages)).not.toContain(wrong);
    expect(callIdsOf(messages)).not.toContain(readA);
    expect(notesOf(messages)).toHaveLength(1);
    expect(stats.chainsCompressed).toBe(1);
    expect(stats.unresolvedChains).toEqual([]);
    expect(stats.rewoundMessages).toBe(2);
    // The hidden call never got a record: nothing can bring it back by ref.
    expect(refOf(wrong!)).toBeUndefined();
  });

  it("a rewind reaching into a chain compressed before it: the block goes on, and the hidden call's summary does not come back out of it", async () => {
    const play = new Play({ ...config, chainCompression: { ...config.chainCompression, rollingWindow: 0 } });
    play.user("one");
    const [readA] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: big("A") }]);
    const [wrong] = play.turn([{ name: "read", args: { path: "src/wrong.ts" }, result: big("WRONG FILE") }]);
    await play.final("one done");
    await play.compress(0);
    expect(play.render().stats).toMatchObject({ chainsCompressed: 1, summariesSuppressed: 2 });
    play.user("two");
    // Its first act: the newest tool turn it can rewind is the chain's last, inside the block.
    play.rewind("last_tool_call_group");

    const { messages, stats, text } = play.render();
    expect(text).not.toContain("WRONG FILE");
    expect(callIdsOf(messages)).not.toContain(wrong);
    expect(stats.chainsCompressed).toBe(1);
    expect(stats.unresolvedChains).toEqual([]);
    const index = rebuildIndex(play.b.entries).index;
    const refOf = (callId: string) => [...index.calls.values()].find((c) => c.record.toolCallId === callId)!.shortRef;
    const summaries = messages.filter((m) => m.role === "custom" && m.customType === "context-prune-summary").map((m) => contentText((m as { content: string }).content));
    expect(summaries.join("\n")).not.toContain(`\`${refOf(wrong!)}\``);
    expect(blocksOf(messages)[0]).toContain(`\`${refOf(readA!)}\``);
  });

  it("a shrink of a result the pruner has summarized: the agent's replacement is sent, not the stub", async () => {
    const play = new Play();
    play.user("fix the build");
    const [log] = play.turn([{ name: "bash", args: { command: "npm run build" }, result: big("BUILD LOG") }]);
    const [other] = play.turn([{ name: "read", args: { path: "src/b.ts" }, result: big("B") }]);
    // Flushed before the agent shrank it: the pruner summarized the log too.
    await play.final("built");
    expect(rebuildIndex(play.b.entries).index.calls.size).toBe(2);
    play.user("go on");
    play.shrink({ by_tool_call_id: log! }, "build: 2 warnings, no errors");
    await play.final("ok");

    const { messages, stats, text } = play.render();
    expect(resultText(messages, log!)).toBe(shrunkText("build: 2 warnings, no errors"));
    expect(resultText(messages, other!)).toMatch(/pruned: see ref `t\d+`/);
    expect(text).not.toContain("BUILD LOG");
    expect(stats.shrunkMessages).toBe(1);
    expect(stats.stubbed).toBe(1);
  });

  it("a rewind of a context_tree_query call: the recovered output leaves, the result's stub stays", async () => {
    const play = new Play();
    play.user("read a");
    const [readA] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: big("ORIGINAL A") }]);
    await play.final("read");
    play.user("what was in a.ts again?");
    const [query] = play.turn([{ name: QUERY_TOOL, args: { toolCallIds: ["t1"] }, result: `### t1\n${big("ORIGINAL A")}` }]);
    const before = play.render();
    expect(resultText(before.messages, query!)).toContain("ORIGINAL A");
    play.rewind("last_tool_call_group");

    const { messages, text } = play.render();
    expect(callIdsOf(messages)).not.toContain(query);
    expect(text).not.toContain("ORIGINAL A");
    expect(resultText(messages, readA!)).toMatch(/pruned: see ref `t1`/);
    expect(notesOf(messages)).toHaveLength(1);
  });

  it("a chain compressed after a checkpoint rewind: the hidden chain gets no block, no record, no ref, and nothing is reported", async () => {
    const play = new Play();
    play.user("one");
    play.turn([{ name: "read", args: { path: "src/a.ts" }, result: big("A") }]);
    await play.final("one done");
    const checkpoint = play.b.entries.findLast((e) => e.type === "message")!.id;
    play.b.label(checkpoint, "mulligan:checkpoint:after-one");
    play.user("two");
    const [two] = play.turn([{ name: "bash", args: { command: "rm -rf dist" }, result: big("TWO OUTPUT") }]);
    await play.final("two done");
    play.user("three");
    const [three] = play.turn([{ name: "read", args: { path: "src/three.ts" }, result: big("THREE OUTPUT") }]);
    const hidden = play.rewind("checkpoint", { checkpoint: "after-one", checkpointEntryId: checkpoint });
    await play.final("back at the checkpoint");
    await laterChains(play, 4, 5);
    await play.compress(1);

    const { messages, stats, text } = play.render();
    const index = rebuildIndex(play.b.entries).index;
    // The chain "two" was flushed before the rewind: its record stays, but no block is made of it.
    expect(index.chains.map((c) => c.startUserTimestamp)).not.toContain(buildPiContext(play.b.entries).find((c) => c.entryId === hidden[0])!.message.timestamp);
    expect([...index.calls.values()].some((c) => c.record.toolCallId === three)).toBe(false);
    expect(text).not.toContain("TWO OUTPUT");
    expect(text).not.toContain("THREE OUTPUT");
    expect(blocksOf(messages).join("\n")).not.toMatch(/rm -rf|three\.ts/);
    expect(messages.some((m) => m.role === "user" && (contentText(m.content) === "two" || contentText(m.content) === "three"))).toBe(false);
    expect(callIdsOf(messages)).not.toContain(two);
    // The pruner summary of chain "two" names only hidden calls: it leaves with them.
    expect(text).not.toMatch(/bash output, summarized/);
    expect(stats.unresolvedChains.filter((c) => !c.absent)).toEqual([]);
    expect(notesOf(messages)).toHaveLength(1);
  });

  it("a checkpoint rewind keeps the pruner summary of the chain before the checkpoint, which its stubs point to", async () => {
    const play = new Play();
    play.user("one");
    const [readA] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: big("A") }]);
    await play.final("one done");
    // The summary lands after the final reply; a checkpoint labels that reply, so the summary is after it.
    const checkpoint = play.b.entries.findLast((e) => e.type === "message")!.id;
    const afterReply = play.b.entries.slice(play.b.entries.findIndex((e) => e.id === checkpoint) + 1);
    expect(afterReply).toContainEqual(expect.objectContaining({ type: "custom_message", customType: "context-prune-summary" }));
    play.user("two");
    play.turn([{ name: "read", args: { path: "src/b.ts" }, result: big("B") }]);
    play.rewind("checkpoint", { checkpointEntryId: checkpoint });

    const { messages } = play.render();
    const ref = /see ref `(t\d+)`/.exec(resultText(messages, readA!) ?? "")?.[1];
    expect(ref).toBeDefined();
    const summaries = messages.filter((m) => m.role === "custom" && m.customType === "context-prune-summary").map((m) => contentText((m as { content: string }).content));
    expect(summaries.join("\n")).toContain(`\`${ref}\``);
  });

  it("Pi's compaction over a hidden span: its messages are gone from the context, the rest goes out whole", () => {
    const play = new Play();
    play.user("task");
    play.turn([{ name: "read", args: { path: "src/a.ts" }, result: "small a" }]);
    const [wrong] = play.turn([{ name: "bash", args: { command: "cat huge.log" }, result: "HIDDEN LOG" }]);
    const hidden = play.rewind("last_tool_call_group");
    play.turn([{ name: "read", args: { path: "src/b.ts" }, result: "small b" }]);
    // Kept from the hidden result on: Pi's cut leaves that result without its call.
    play.b.compaction({ firstKeptEntryId: hidden[1]!, summary: "Earlier: read a.ts, ran cat." });
    play.user("continue");

    const { input, messages, stats, text } = play.render();
    expect(text).not.toContain("HIDDEN LOG");
    expect(callIdsOf(messages)).not.toContain(wrong);
    // Everything else Pi built is sent, in order.
    const keys = (ms: readonly AgentMessage[]) => ms.map(messageKey);
    expect(keys(messages)).toEqual(keys(input).filter((k) => !k.includes(wrong!)));
    expect(stats.rewoundMessages).toBe(1);
    expect(messages[0]!.role).toBe("compactionSummary");
  });

  it("protected output inside a rewound span stays with its unit, and a shrink of a protected result is not applied", async () => {
    const play = new Play();
    play.user("release");
    const [skill] = play.turn([{ name: "read", args: { path: "skills/release/SKILL.md" }, result: "# Release\n1. run the gate" }]);
    const [plain] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: "PLAIN A" }]);
    play.shrink({ by_tool_call_id: skill! }, "a release skill");
    play.rewind("last_turn");

    const { messages, stats, text } = play.render();
    expect(resultText(messages, skill!)).toBe("# Release\n1. run the gate");
    expect(callIdsOf(messages)).not.toContain(plain);
    expect(text).not.toContain("PLAIN A");
    expect(stats.rewindKeptProtected).toBe(1);
    expect(stats.shrunkMessages).toBe(0);
  });

  it("selfControl.enabled false: every marker is left alone and the pruner renders as without them", async () => {
    const play = new Play();
    play.user("task");
    const [a] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: "A" }]);
    play.shrink({ by_tool_call_id: a! }, "short a");
    play.turn([{ name: "bash", args: { command: "ls" }, result: "LISTING" }]);
    play.rewind("last_tool_call_group");
    const off = { ...config, selfControl: { ...config.selfControl, enabled: false } };
    const input = piContext(play.b);
    const rendered = renderModelView(input, rebuildIndex(play.b.entries).index, off, play.controls());
    expect(rendered.messages).toBe(input);
    expect(rendered.stats).toMatchObject({ rewoundMessages: 0, shrunkMessages: 0 });
  });

  it("the pruner's enabled false with selfControl on: rewinds and shrinks still apply, nothing is stubbed", async () => {
    const play = new Play();
    play.user("task");
    const [a] = play.turn([{ name: "read", args: { path: "src/a.ts" }, result: big("A") }]);
    await play.final("read");
    play.user("more");
    const [b] = play.turn([{ name: "read", args: { path: "src/b.ts" }, result: "B CONTENT" }]);
    play.shrink({ by_tool_call_id: b! }, "b.ts: a constant");
    const [ls] = play.turn([{ name: "bash", args: { command: "ls" }, result: "LISTING" }]);
    play.rewind("last_tool_call_group");
    const { messages, stats, text } = play.render({ ...config, enabled: false });
    expect(resultText(messages, a!)).toContain("xxxx");
    expect(resultText(messages, b!)).toBe(shrunkText("b.ts: a constant"));
    expect(text).not.toContain("LISTING");
    expect(callIdsOf(messages)).not.toContain(ls);
    expect(stats).toMatchObject({ stubbed: 0, shrunkMessages: 1 });
    expect(stats.rewoundMessages).toBeGreaterThan(0);
  });

  it("renderWhole reports the messages after the self-control step first", () => {
    const play = new Play();
    play.user("task");
    const [ls] = play.turn([{ name: "bash", args: { command: "ls" }, result: "LISTING" }]);
    play.rewind("last_tool_call_group");
    const seen: [string, number][] = [];
    const input = piContext(play.b);
    renderWhole(input, rebuildIndex(play.b.entries).index, config, play.controls(), (step, messages) => seen.push([step, messages.length]));
    expect(seen[0]).toEqual(["self-control", input.length - 2]);
    expect(callIdsOf(input)).toContain(ls);
  });
});

describe("sessions pi-mulligan wrote, as the model is sent them", () => {
  const cases = [
    ["Pi 0.84", mulliganSessionOnPi084(), true],
    ["Pi 1.6", mulliganSessionOnPi16(), false],
    ["Pi 1.6, markers without entry ids", mulliganSessionOnPi16({ pinned: false }), true],
  ] as const;
  for (const [name, { builder, ids }, testLogShrunk] of cases) {
    it(`${name}: the wrong read is not sent, the note is, and the test-log shrink applies while active`, () => {
      const input = piContext(builder);
      const { messages } = renderModelView(input, rebuildIndex(builder.entries).index, config, readControls(builder.entries));
      expect(pairingProblem(messages)).toBeUndefined();
      const text = JSON.stringify(messages);
      expect(text).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);
      expect(callIdsOf(messages)).not.toContain(ids.wrongRead.callId);
      expect(notesOf(messages).map((m) => contentText((m as { content: string }).content))).toEqual([expect.stringContaining(MULLIGAN_STORY_TEXT.noteWhatHappened)]);
      expect(resultText(messages, ids.testRun.callId)).toBe(testLogShrunk ? shrunkText(MULLIGAN_STORY_TEXT.testLogReplacement) : resultText(input, ids.testRun.callId));
      expect(messages).toHaveLength(input.length - 2);
    });
  }
});
