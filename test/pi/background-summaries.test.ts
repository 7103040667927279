// The cache-aware policy's flushes ask for their summaries in the background: the turn's end
// returns at once, the summaries that came back are applied at the next flush point, and only a
// flush that keeps the window from overflowing waits. Driven the way Pi drives the runtime: a
// session built turn by turn, every entry the runtime returns persisted, and a summarizer whose
// answers the test releases one request at a time.
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { memorySpillStorage } from "../../core/src/session/blobs.ts";
import { PRUNE_CHAIN, PRUNE_SUMMARY, type ChainData, type PersistEntry } from "../../core/src/shapes/entries.ts";
import type { AssistantMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";
import type { Summarizer, SummarizerAnswer } from "../../core/src/prune/summarizer-prompts.ts";
import { EMPTY_CONTROLS } from "../../core/src/control/control-entries.ts";
import { rebuildIndex } from "../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../core/src/render/render.ts";
import { PrunerRuntime, type RuntimeHost } from "../../pi-extension/src/runtime.ts";
import { OnceReporter } from "../../pi-extension/src/once-reporter.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { big, echoSummarizer, persist, piContext, resultTexts } from "../helpers/prune-session.ts";

const STUB = "pruned: see ref";

/** A summarizer request the test answers (with the echo summarizer's answer) or fails when it chooses. */
interface HeldRequest {
  /** The files whose reads it asks about, by number (src/fN.ts). */
  files: number[];
  prompt: string;
  answered: boolean;
  answer(): void;
  fail(message: string): void;
}

function session(overrides: Partial<typeof DEFAULT_CONFIG> = {}) {
  const seen: string[] = [];
  // Mid-task flushes ask in the background only with backgroundSummaries.
  const rt = new PrunerRuntime({ ...DEFAULT_CONFIG, backgroundSummaries: true, ...overrides }, new OnceReporter((m) => seen.push(m)));
  rt.useModel("openai-completions");
  const b = new SessionBuilder();
  rt.startSession(b.entries, memorySpillStorage());
  const held: HeldRequest[] = [];
  const summarizer: Summarizer = (request) =>
    new Promise<SummarizerAnswer>((resolve, reject) => {
      const asked: HeldRequest = {
        files: [...request.prompt.matchAll(/src\/f(\d+)\.ts/g)].map((m) => Number(m[1])),
        prompt: request.prompt,
        answered: false,
        answer: () => {
          asked.answered = true;
          void echoSummarizer(request).then(resolve);
        },
        fail: (message) => {
          asked.answered = true;
          reject(new Error(message));
        },
      };
      held.push(asked);
    });
  let usage = { tokens: 10_000, contextWindow: 100_000 };
  const host: RuntimeHost = {
    contextUsage: () => usage,
    summarizer: () => summarizer,
    contextMessages: () => piContext(b),
    controls: () => EMPTY_CONTROLS,
  };
  let turnIndex = 0;
  let file = 0;
  /** One request, then a turn reading one new 8,000-character file; what turn_end returns is persisted, as Pi does. */
  const readTurn = async (): Promise<PersistEntry[]> => {
    rt.render(piContext(b));
    b.assistant({ toolCalls: [{ name: "read", args: { path: `src/f${file}.ts` } }] });
    b.toolResult(b.lastToolCallIds[0]!, "read", big(`file ${file}`, 8_000));
    file++;
    const messages = piContext(b);
    const entries = await rt.turnEnd({ message: messages.at(-2)!, toolResults: messages.slice(-1) as ToolResultMessage[], turnIndex: turnIndex++, outcome: "completed" }, host);
    persist(b, entries);
    return entries;
  };
  /** Reads until the policy first decides that a flush pays back; returns its request. */
  const untilFirstFlush = async () => {
    b.user("read the whole project");
    while (held.length === 0 && file < 40) expect(await readTurn()).toEqual([]);
    expect(rt.lastDecision).toMatchObject({ moment: "mid-task", flush: true, reason: "pays-back" });
    return held[0]!;
  };
  /** Which files' reads the model is sent as stubs now, by number. */
  const stubbed = () =>
    resultTexts(rt.render(piContext(b)))
      .map((t, i) => (t.includes(STUB) ? i : -1))
      .filter((i) => i >= 0);
  /** A budget trigger from the next turn's end on. */
  const nearlyFull = () => {
    usage = { tokens: 90_000, contextWindow: 100_000 };
    rt.config = { ...rt.config, autoBudgetThreshold: 0.8 };
  };
  /** One request, then the task's final reply and its turn_end; returns what was persisted. */
  const finalReply = async (): Promise<PersistEntry[]> => {
    rt.render(piContext(b));
    b.assistant("all read");
    const entries = await rt.turnEnd({ message: piContext(b).at(-1)!, toolResults: [], turnIndex: turnIndex++, outcome: "completed" }, host);
    persist(b, entries);
    return entries;
  };
  const answerAll = async () => {
    for (const request of held.filter((r) => !r.answered)) request.answer();
    await settle();
  };
  /** Awaits `work`, answering every summarizer request it makes meanwhile. */
  const answering = async <T>(work: Promise<T>): Promise<T> => {
    let done = false;
    const result = work.finally(() => (done = true));
    while (!done) await answerAll();
    return result;
  };
  return { rt, b, held, host, seen, readTurn, untilFirstFlush, finalReply, answerAll, answering, stubbed, nearlyFull, files: () => file };
}

const summaries = (entries: readonly PersistEntry[]) => entries.filter((e) => e.customType === PRUNE_SUMMARY);
/** Lets an answer travel through the queue. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
/** The render from the session file alone equals the live runtime's: the editor shows what was sent. */
function expectRebuildRendersTheSame(s: ReturnType<typeof session>) {
  const rebuilt = rebuildIndex(s.b.entries).index;
  expect(JSON.stringify(renderModelView(piContext(s.b), rebuilt, s.rt.config).messages)).toBe(JSON.stringify(s.rt.render(piContext(s.b))));
}

describe("summaries in the background", () => {
  it("a flush that pays back returns at once; its summaries are applied at the next turn's end, and until then the model sees what it saw", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    // Every read but the newest, which the model has not seen; all of them still pending.
    expect(first.files).toEqual(range(0, s.files() - 1));
    expect(s.rt.pendingCallCount()).toBe(s.files());
    expect(s.stubbed()).toEqual([]);

    first.answer();
    await settle();
    // The answer is in, but history changes only at a flush point.
    expect(s.stubbed()).toEqual([]);

    // One summary per batch, from the one request.
    const applied = await s.readTurn();
    expect(summaries(applied)).toHaveLength(first.files.length);
    expect(s.stubbed()).toEqual(first.files);
    expectRebuildRendersTheSame(s);
  });

  it("mid-task, one summarizer request at a time: while one is out, a flush that would pay back waits, and its batches join the next flush's one request", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    for (let i = 0; i < 3; i++) expect(summaries(await s.readTurn())).toEqual([]);
    // Nothing more is asked while the first request is out, although flushing would pay back.
    expect(s.held).toHaveLength(1);
    expect(s.rt.lastDecision).toMatchObject({ moment: "mid-task", flush: false, reason: "summarizer-busy" });
    first.answer();
    await settle();
    // The next turn's end applies the first request's summaries and asks about every read waiting
    // since (but the newest, which the model has not seen) in one request.
    expect(summaries(await s.readTurn())).toHaveLength(first.files.length);
    expect(s.held).toHaveLength(2);
    expect(s.held[1]!.files).toEqual(range(first.files.length, s.files() - 1));
    expect(s.stubbed()).toEqual(first.files);
    expectRebuildRendersTheSame(s);
  });

  it("a flush point applies only the summaries that are ready and leaves the rest for the next one", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    expect(summaries(await s.readTurn())).toEqual([]);
    // A final reply's flush does not wait for the request out: the reads since go in a second one.
    await s.finalReply();
    expect(s.held).toHaveLength(2);
    const second = s.held[1]!;
    // A read already asked about is not asked about again while its request is out.
    expect(second.files.length).toBeGreaterThan(0);
    expect(second.files.filter((f) => first.files.includes(f))).toEqual([]);

    second.answer();
    await settle();
    s.b.user("read on");
    expect(summaries(await s.readTurn())).toHaveLength(second.files.length);
    expect(s.stubbed()).toEqual(second.files);

    first.answer();
    await settle();
    expect(summaries(await s.readTurn())).toHaveLength(first.files.length);
    expect(s.stubbed()).toEqual([...first.files, ...second.files]);
    expectRebuildRendersTheSame(s);
  });

  it("a final reply writes no summary after the answer, even one that came back: the next flush point applies it", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    first.answer();
    await settle();
    // A message after the answer would stand in its place as the last one Pi prints.
    expect(summaries(await s.finalReply())).toEqual([]);
    const { entries, answered } = await s.answering(s.rt.settleAsked(s.host));
    expect(answered).toBe(true);
    expect(summaries(entries).length).toBeGreaterThanOrEqual(first.files.length);
    persist(s.b, entries);
    expect(s.stubbed()).toEqual(expect.arrayContaining(first.files));
    expectRebuildRendersTheSame(s);
  });

  it("at the session's end, a request that does not answer within the bound leaves its batches pending and writes nothing of them", async () => {
    const s = session();
    await s.untilFirstFlush();
    await s.finalReply();
    const pending = s.rt.pendingCallCount();
    // The summarizer never answers here: the bound ends the wait.
    const { entries, answered } = await s.rt.settleAsked(s.host, 20);
    expect(answered).toBe(false);
    expect(summaries(entries)).toEqual([]);
    expect(s.rt.pendingCallCount()).toBe(pending);
    expect(s.stubbed()).toEqual([]);
  });

  it("a background request that fails is reported once and its batches wait again: the next flush asks about them again", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    first.fail("overloaded");
    await settle();
    // The next turn's end is a budget flush: it applies the failure, then asks about everything waiting and waits.
    s.nearlyFull();
    const flushed = s.readTurn();
    await settle();
    expect(s.held).toHaveLength(2);
    expect(s.held[1]!.files).toEqual(range(0, s.files()));
    s.held[1]!.answer();
    const entries = await flushed;
    expect(summaries(entries)).toHaveLength(s.files());
    expect(s.seen).toEqual(["pi-pruner: summarizer failed (overloaded); raw outputs stay in context and the batch will be retried"]);
    expect(s.rt.pendingCallCount()).toBe(0);
    expect(s.stubbed()).toEqual(range(0, s.files()));
  });

  it("a rebuild drops what is in flight: its answer is never applied and the batches are pending again from the branch", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    const pending = s.rt.pendingCallCount();
    s.rt.rebuild(s.b.entries, memorySpillStorage());
    expect(s.rt.pendingCallCount()).toBe(pending);
    first.answer();
    await settle();
    expect(summaries(await s.readTurn())).toEqual([]);
    expect(s.stubbed()).toEqual([]);
    // /pruner now asks about every read, those of the dropped request among them.
    persist(s.b, (await s.answering(s.rt.flushes.flushCommand(s.host))).entries);
    // The reads of the dropped request were asked about again by a later one.
    expect(s.held.slice(1).flatMap((r) => r.files)).toEqual(expect.arrayContaining(first.files));
    expect(s.stubbed()).toEqual(range(0, s.files()));
    expectRebuildRendersTheSame(s);
  });

  it("a budget flush waits for the request in flight, then for its own summaries, before the next request", async () => {
    const s = session();
    const first = await s.untilFirstFlush();
    s.nearlyFull();
    let done = false;
    const flushed = s.readTurn().then((entries) => ((done = true), entries));
    await settle();
    // Nothing new is asked, and the turn's end does not return, while the first request is out.
    expect(s.held).toHaveLength(1);
    expect(done).toBe(false);
    first.answer();
    await settle();
    expect(done).toBe(false);
    // Then everything still waiting is asked about (the newest read too), and waited for.
    expect(s.held).toHaveLength(2);
    expect(s.held[1]!.files).toEqual(range(first.files.length, s.files()));
    s.held[1]!.answer();
    expect(summaries(await flushed)).toHaveLength(s.files());
    expect(s.rt.pendingCallCount()).toBe(0);
    expect(s.stubbed()).toEqual(range(0, s.files()));
    expectRebuildRendersTheSame(s);
  });

  it("a final reply's flush leaves its summaries in the background; the chain it closed is compressed when they are applied", async () => {
    const s = session({ chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 0 } });
    await s.untilFirstFlush();
    await s.answerAll();
    await s.readTurn();
    await s.answerAll();
    const atReply = await s.finalReply();
    expect(s.rt.lastDecision).toMatchObject({ moment: "final-reply", flush: true });
    // The reads still waiting are asked about in the background; without their summaries the chain waits.
    const out = s.held.filter((r) => !r.answered);
    expect(out).toHaveLength(1);
    expect(out[0]!.files).toContain(s.files() - 1);
    expect(atReply.map((e) => e.customType)).not.toContain(PRUNE_CHAIN);
    await s.answerAll();
    s.b.user("next task");
    // The next turn's end applies them, then compresses the chain (fusing its summaries: one more request).
    const asked = s.held.length;
    const applied = await s.answering(s.readTurn());
    expect(s.held.slice(asked)).toHaveLength(1);
    const types = applied.map((e) => e.customType);
    expect(types.indexOf(PRUNE_CHAIN)).toBeGreaterThan(types.lastIndexOf(PRUNE_SUMMARY));
    const chain = applied.find((e) => e.customType === PRUNE_CHAIN) as { data: ChainData };
    expect(chain.data.toolRefs).toHaveLength(s.files() - 1);
    expectRebuildRendersTheSame(s);
  });

  it("a flush point that applies a final reply's last summaries compresses its chain even while it asks about newer reads", async () => {
    const s = session({ chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 0 } });
    await s.untilFirstFlush();
    await s.answerAll();
    const atReply = await s.finalReply();
    expect(atReply.map((e) => e.customType)).not.toContain(PRUNE_CHAIN);
    await s.answerAll();
    // The next task reads a file; a flush that applies what came back also asks about that read.
    s.b.user("next task");
    s.b.assistant({ toolCalls: [{ name: "read", args: { path: "src/next.ts" } }] });
    s.b.toolResult(s.b.lastToolCallIds[0]!, "read", big("next", 8_000));
    const messages = piContext(s.b);
    s.rt.captureTurn(messages.at(-2) as AssistantMessage, messages.slice(-1) as ToolResultMessage[], 100);
    const asked = s.held.length;
    const flushed = s.rt.flushes.flushAndCompress(s.host.summarizer(), () => piContext(s.b), { compress: "none", background: true });
    const { entries } = await s.answering(flushed);
    expect(s.held.slice(asked).filter((r) => r.prompt.includes("src/next.ts"))).toHaveLength(1);
    expect(entries.map((e) => e.customType)).toContain(PRUNE_CHAIN);
    expect((entries.find((e) => e.customType === PRUNE_CHAIN) as { data: ChainData }).data.toolRefs).toHaveLength(s.files());
  });
});
