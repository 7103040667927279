// One summarizer request per flush, its answer split back into each batch's summary by ref, and
// outputs a later call made stale stubbed without the summarizer.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, persist, piContext, resultTexts } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches, splitJoinedAnswer, type Batch } from "../../../core/src/prune/flush.ts";
import { sessionCallsOf } from "../../../core/src/prune/stale-outputs.ts";
import { emptyIndex, rebuildIndex, resolveRequest } from "../../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { PRUNE_SUMMARY, type PersistEntry } from "../../../core/src/shapes/entries.ts";
import type { AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import type { Summarizer, SummarizerRequest } from "../../../core/src/prune/summarizer-prompts.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { isPrunedState } from "../../../core/src/view/call-state.ts";
import { callStateText } from "../../../core/src/view/file-calls.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths], protectedTools: [] };

/** The batches of every tool-using turn of the session, oldest first, as capture makes them. */
function batchesOf(b: SessionBuilder): Batch[] {
  const messages = piContext(b);
  const batches: Batch[] = [];
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const results: ToolResultMessage[] = [];
    for (let j = i + 1; j < messages.length && messages[j]!.role === "toolResult"; j++) results.push(messages[j] as ToolResultMessage);
    const { batch } = captureBatch(m as AssistantMessage, results, i, config);
    if (batch) batches.push(batch);
  });
  return batches;
}

/** A summarizer that answers what `answer` says and records every request. */
function scripted(answer: (request: SummarizerRequest, n: number) => string | Promise<string>) {
  const requests: SummarizerRequest[] = [];
  const summarizer: Summarizer = async (request) => {
    requests.push(request);
    return { text: await answer(request, requests.length), usage: { input: 10, output: 5, cost: 0.0001 } };
  };
  return { requests, summarizer };
}

/** The refs a request names its calls by. */
const refsAsked = (request: SummarizerRequest) => [...request.prompt.matchAll(/^### (t\d+) — /gm)].map((m) => m[1]!);
const summaries = (entries: readonly PersistEntry[]) => entries.filter((e): e is Extract<PersistEntry, { kind: "message" }> => e.kind === "message" && e.customType === PRUNE_SUMMARY);

function threeReads(): SessionBuilder {
  const b = new SessionBuilder().user("go");
  b.toolUse("read", { path: "a.ts" }, big("A"));
  b.toolUse("read", { path: "b.ts" }, big("B"));
  b.assistant({ toolCalls: [{ name: "read", args: { path: "c.ts" } }, { name: "grep", args: { pattern: "x" } }] });
  b.toolResult(b.lastToolCallIds[0]!, "read", big("C")).toolResult(b.lastToolCallIds[1]!, "grep", big("G"));
  return b;
}

describe("one summarizer request per flush", () => {
  it("every batch goes in one request and gets its own summary back, with the refs it was asked under", async () => {
    const b = threeReads();
    const { requests, summarizer } = scripted((r) => echoSummarizer(r).then((a) => a.text));
    const result = await flushBatches(batchesOf(b), emptyIndex(), config, summarizer);
    expect(requests).toHaveLength(1);
    expect(refsAsked(requests[0]!)).toEqual(["t1", "t2", "t3", "t4"]);
    expect(result.summarizerCalls).toBe(1);
    const texts = summaries(result.entries).map((s) => s.content);
    expect(texts).toHaveLength(3);
    expect(texts[0]).toMatch(/^- `t1` read output, summarized\n\nPruned refs: `t1`\.$/);
    expect(texts[1]).toMatch(/^- `t2` read output, summarized\n\nPruned refs: `t2`\.$/);
    expect(texts[2]).toBe("- `t3` read output, summarized\n- `t4` grep output, summarized\n\nPruned refs: `t3`, `t4`.");
    expect(result.usage).toEqual({ input: 10, output: 5, cost: 0.0001 });
  });

  it("a batch whose refs the joined answer leaves out is asked again on its own; the others are not", async () => {
    const b = threeReads();
    const { requests, summarizer } = scripted((r, n) =>
      n === 1 ? "Here you go:\n- `t1` a.ts holds A\n- `t3` c.ts holds C\n  and more on C\n- `t4` a grep for x" : echoSummarizer(r).then((a) => a.text),
    );
    const result = await flushBatches(batchesOf(b), emptyIndex(), config, summarizer);
    expect(requests.map(refsAsked)).toEqual([["t1", "t2", "t3", "t4"], ["t2"]]);
    expect(result.summarizerCalls).toBe(2);
    const texts = summaries(result.entries).map((s) => s.content);
    expect(texts).toEqual([
      "- `t1` a.ts holds A\n\nPruned refs: `t1`.",
      "- `t2` read output, summarized\n\nPruned refs: `t2`.",
      "- `t3` c.ts holds C\n  and more on C\n- `t4` a grep for x\n\nPruned refs: `t3`, `t4`.",
    ]);
  });

  it("an answer with no bullet for any ref sends every batch to a request of its own", async () => {
    const b = threeReads();
    const { requests, summarizer } = scripted((r, n) => (n === 1 ? "I cannot help with that." : echoSummarizer(r).then((a) => a.text)));
    const result = await flushBatches(batchesOf(b), emptyIndex(), config, summarizer);
    expect(requests.map(refsAsked)).toEqual([["t1", "t2", "t3", "t4"], ["t1"], ["t2"], ["t3", "t4"]]);
    expect(summaries(result.entries)).toHaveLength(3);
  });

  it("a joined request that fails leaves every batch in it pending, and nothing of them is indexed", async () => {
    const b = threeReads();
    const index = emptyIndex();
    const result = await flushBatches(batchesOf(b), index, config, async () => Promise.reject(new Error("overloaded")));
    expect(result.retry).toHaveLength(3);
    expect(summaries(result.entries)).toEqual([]);
    expect(index.calls.size).toBe(0);
    // Retried, the calls get the refs they would have had.
    const again = await flushBatches(result.retry, index, config, echoSummarizer);
    expect(summaries(again.entries).map((s) => s.details)).toMatchObject([{ toolCallRefs: [{ shortId: "t1" }] }, { toolCallRefs: [{ shortId: "t2" }] }, { toolCallRefs: [{ shortId: "t3" }, { shortId: "t4" }] }]);
  });

  it("the split gives each bullet to the batch of the first ref it names, and drops headings and what comes before the bullets", () => {
    expect(splitJoinedAnswer("- `t1` one\n- `t2` two, like `t1`", [["t1"], ["t2"]])).toEqual(["- `t1` one", "- `t2` two, like `t1`"]);
    expect(splitJoinedAnswer("## Batch\n- `t2` two\n- `t1` one", [["t1"], ["t2"]])).toEqual(["- `t1` one", "- `t2` two"]);
  });
});

describe("outputs a later call made stale", () => {
  /** Flushes every batch but the newest (which the model has not seen yet), knowing every call the session made. */
  async function flushAllButNewest(b: SessionBuilder, summarizer: Summarizer = echoSummarizer, settings: PruneConfig = config) {
    const batches = batchesOf(b);
    const index = emptyIndex();
    const result = await flushBatches(batches.slice(0, -1), index, settings, summarizer, { sessionCalls: sessionCallsOf(piContext(b)) });
    return { result, index };
  }

  it("a read followed by an edit of the same file becomes a stub naming the edit, without a summarizer call, and stays recoverable", async () => {
    const b = new SessionBuilder().user("fix a.ts");
    b.toolUse("read", { path: "src/a.ts" }, big("OLD CONTENT OF A"));
    b.toolUse("edit", { path: "./src/a.ts", oldText: "x", newText: "y" }, "Successfully replaced text in src/a.ts.");
    const { requests, summarizer } = scripted(() => "- unused");
    const { result, index } = await flushAllButNewest(b, summarizer);
    expect(requests).toEqual([]);
    expect(result.summarizerCalls).toBe(0);
    expect(result.outcomes.map((o) => o.outcome)).toEqual(["superseded"]);
    persist(b, result.entries);
    const rebuilt = rebuildIndex(b.entries);
    expect(rebuilt.problems).toEqual([]);
    const texts = resultTexts(renderModelView(piContext(b), rebuilt.index, config).messages);
    expect(texts[0]).toBe("[read output superseded by a later call (edit ./src/a.ts); context_tree_query returns ref `t1`]");
    expect(resolveRequest(rebuilt.index, "t1")[0]?.record.resultText).toContain("OLD CONTENT OF A");
    expect(index.calls.size).toBe(1);
  });

  it("the same command run again makes the first run's output a stub naming the run that replaced it", async () => {
    const b = new SessionBuilder().user("make the tests pass");
    b.toolUse("bash", { command: "npm test" }, big("3 failing"));
    b.toolUse("read", { path: "src/b.ts" }, big("B"));
    b.toolUse("bash", { command: "npm test" }, big("all passing"));
    const { requests, summarizer } = scripted((r) => echoSummarizer(r).then((a) => a.text));
    const { result } = await flushAllButNewest(b, summarizer);
    // Only the read goes to the summarizer.
    expect(requests.map(refsAsked)).toEqual([["t2"]]);
    persist(b, result.entries);
    const texts = resultTexts(renderModelView(piContext(b), rebuildIndex(b.entries).index, config).messages);
    expect(texts[0]).toBe("[bash output superseded by a later call (bash npm test); context_tree_query returns ref `t1`]");
    expect(texts[1]).toContain("pruned: see ref `t2`");
    expect(texts[2]).toContain("all passing");
  });

  it("a later call already indexed is named by its ref", async () => {
    const b = new SessionBuilder().user("go");
    b.toolUse("read", { path: "a.ts" }, big("A"));
    b.toolUse("read", { path: "b.ts" }, big("B"));
    b.toolUse("read", { path: "a.ts" }, big("A again"));
    const [first, second, third] = batchesOf(b);
    const index = emptyIndex();
    const calls = sessionCallsOf(piContext(b));
    // The newest read is summarized first (a flush of the newest batch alone), then the older ones.
    await flushBatches([third!], index, config, echoSummarizer, { sessionCalls: calls, frontierCeiling: first!.calls[0]!.resultTimestamp - 1 });
    const result = await flushBatches([first!, second!], index, config, echoSummarizer, { sessionCalls: calls });
    persist(b, result.entries);
    const stub = resultTexts(renderModelView(piContext(b), index, config).messages)[0];
    expect(stub).toBe("[read output superseded by t1 (read a.ts); context_tree_query returns ref `t2`]");
  });

  it("a protected read is never stubbed, even when the file is edited later", async () => {
    const b = new SessionBuilder().user("deploy");
    b.toolUse("read", { path: "skills/deploy/SKILL.md" }, big("# Deploy skill"));
    b.toolUse("edit", { path: "skills/deploy/SKILL.md", oldText: "a", newText: "b" }, "ok");
    b.toolUse("bash", { command: "ls" }, "a");
    // The read given to the flush directly, as if protection had been added after its capture.
    const read = piContext(b)[2] as ToolResultMessage;
    const batch: Batch = { turnIndex: 1, calls: [{ toolCallId: read.toolCallId, toolName: "read", args: { path: "skills/deploy/SKILL.md" }, resultText: big("# Deploy skill"), isError: false, turnIndex: 1, timestamp: read.timestamp - 1, resultTimestamp: read.timestamp }] };
    const { requests, summarizer } = scripted((r) => echoSummarizer(r).then((a) => a.text));
    const result = await flushBatches([batch], emptyIndex(), config, summarizer, { sessionCalls: sessionCallsOf(piContext(b)) });
    expect(result.outcomes.map((o) => o.outcome)).toEqual(["summarized"]);
    expect(requests).toHaveLength(1);
  });

  it("a read followed by a read of another file, a ranged read of another range or a failed edit stays for the summarizer", async () => {
    const b = new SessionBuilder().user("look around");
    b.toolUse("read", { path: "src/a.ts", offset: 1, limit: 50 }, big("A head"));
    b.toolUse("read", { path: "src/b.ts" }, big("B"));
    b.toolUse("read", { path: "src/a.ts", offset: 51, limit: 50 }, big("A tail"));
    b.toolUse("edit", { path: "src/a.ts", oldText: "nope", newText: "x" }, "Could not find the text", { isError: true });
    b.toolUse("bash", { command: "npm test -- a" }, "ok");
    const { requests, summarizer } = scripted((r) => echoSummarizer(r).then((a) => a.text));
    const { result } = await flushAllButNewest(b, summarizer);
    expect(result.outcomes.filter((o) => o.outcome === "superseded")).toEqual([]);
    expect(requests.map(refsAsked)).toEqual([["t1", "t2", "t3"]]);
  });

  it("a whole-file read supersedes an earlier ranged read; a ranged read supersedes only the same range", async () => {
    const b = new SessionBuilder().user("look");
    b.toolUse("read", { path: "a.ts", offset: 10, limit: 5 }, big("A part"));
    b.toolUse("read", { path: "a.ts", offset: 10, limit: 5 }, big("A part again"));
    b.toolUse("read", { path: "a.ts" }, big("A whole"));
    b.toolUse("bash", { command: "ls" }, "a");
    const { result } = await flushAllButNewest(b);
    expect(result.outcomes.map((o) => o.outcome)).toEqual(["superseded", "superseded", "summarized"]);
  });

  it("a flush whose batches are all stale makes no summarizer call", async () => {
    const b = new SessionBuilder().user("go");
    b.toolUse("read", { path: "a.ts" }, big("A"));
    b.toolUse("bash", { command: "npm run build" }, big("build log"));
    b.assistant({ toolCalls: [{ name: "write", args: { path: "a.ts", content: "new" } }, { name: "bash", args: { command: "npm run build" } }] });
    b.toolResult(b.lastToolCallIds[0]!, "write", "ok").toolResult(b.lastToolCallIds[1]!, "bash", big("build log 2"));
    let asked = 0;
    const { result } = await flushAllButNewest(b, async (r) => (asked++, echoSummarizer(r)));
    expect(asked).toBe(0);
    expect(result.outcomes.map((o) => o.outcome)).toEqual(["superseded", "superseded"]);
  });
});

describe("a stale output in the views", () => {
  it("the session view and the state line say what superseded it, with its ref", async () => {
    const b = new SessionBuilder().user("fix a.ts");
    b.toolUse("read", { path: "src/a.ts" }, big("A"));
    b.toolUse("write", { path: "src/a.ts", content: "new" }, "Wrote src/a.ts");
    const result = await flushBatches(batchesOf(b).slice(0, -1), emptyIndex(), config, echoSummarizer, { sessionCalls: sessionCallsOf(piContext(b)) });
    persist(b, result.entries);
    const view = buildSessionView(parseSessionText(b.toJsonl()), { config });
    const read = view.calls.find((c) => c.toolName === "read")!;
    expect(read.state).toBe("superseded");
    expect(isPrunedState(read.state)).toBe(true);
    expect(callStateText(read)).toBe("superseded by a later call (write src/a.ts) (ref t1)");
  });
});
