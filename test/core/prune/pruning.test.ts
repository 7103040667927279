import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches, spillOversized, type Batch } from "../../../core/src/prune/flush.ts";
import { type PersistEntry } from "../../../core/src/shapes/entries.ts";
import { emptyIndex, rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { QUERY_TOOL } from "../../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";
import type { AnyEntry } from "../../../core/src/shapes/entries.ts";
import type { Summarizer } from "../../../core/src/prune/summarizer-prompts.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths], protectedTools: [] };
const big = (label: string, n = 1500) => `${label}\n${"x".repeat(n)}`;

/** A summarizer that names every ref it is given, like a well-behaved model. */
const echoSummarizer: Summarizer = async (request) => {
  const refs = [...request.prompt.matchAll(/^### (t\d+) — (\S+)/gm)].map((m) => `- \`${m[1]}\` ${m[2]} output, summarized`);
  return { text: refs.join("\n"), usage: { input: 100, output: 20, cost: 0.001 } };
};

function messagesOf(b: SessionBuilder): AgentMessage[] {
  return b.entries.filter((e) => e.type === "message").map((e) => (e as { message: AgentMessage }).message);
}

function lastTurn(b: SessionBuilder): { assistant: AssistantMessage; results: ToolResultMessage[] } {
  const messages = messagesOf(b);
  let i = messages.length - 1;
  const results: ToolResultMessage[] = [];
  while (i >= 0 && messages[i]!.role === "toolResult") results.unshift(messages[i--] as ToolResultMessage);
  return { assistant: messages[i] as AssistantMessage, results };
}

function persist(b: SessionBuilder, entries: readonly PersistEntry[]): void {
  for (const e of entries) {
    if (e.kind === "custom") b.custom(e.customType, e.data);
    else b.customMessage(e.customType, e.content, e.details);
  }
}

function contextOf(b: SessionBuilder): AgentMessage[] {
  return b.entries.flatMap((e: AnyEntry) => {
    if (e.type === "message") return [(e as { message: AgentMessage }).message];
    if (e.type === "custom_message") {
      const m = e as unknown as { customType: string; content: string; details: unknown; timestamp: string };
      return [{ role: "custom", customType: m.customType, content: m.content, display: false, details: m.details, timestamp: Date.parse(m.timestamp) } as AgentMessage];
    }
    return [];
  });
}

function resultTexts(messages: AgentMessage[]): string[] {
  return messages.filter((m) => m.role === "toolResult").map((m) => contentText((m as ToolResultMessage).content));
}

describe("capture", () => {
  it("a read of a skill file never enters the batch, the other calls do", () => {
    const b = new SessionBuilder().user("go").assistant({
      toolCalls: [
        { name: "read", args: { path: "skills/deploy/SKILL.md" } },
        { name: "read", args: { path: "src/app.ts" } },
        { name: "bash", args: { command: "npm test" } },
      ],
    });
    b.toolResult("call_1", "read", "# Deploy skill\n1. run the gate").toolResult("call_2", "read", big("app")).toolResult("call_3", "bash", big("tests"));
    const { assistant, results } = lastTurn(b);
    const captured = captureBatch(assistant, results, 1, config);
    expect(captured.batch?.calls.map((c) => c.toolCallId)).toEqual(["call_2", "call_3"]);
    expect(captured.protectedCalls.map((c) => c.args.path)).toEqual(["skills/deploy/SKILL.md"]);
  });
});

describe("flush", () => {
  function oneBatch(b: SessionBuilder): Batch {
    const { assistant, results } = lastTurn(b);
    return captureBatch(assistant, results, 1, config).batch!;
  }

  it("a summarized batch persists its index, then its summary, then the frontier", async () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a.ts" } }, { name: "grep", args: { pattern: "x" } }] });
    b.toolResult("call_1", "read", big("a")).toolResult("call_2", "grep", big("g"));
    const index = emptyIndex();
    const result = await flushBatches([oneBatch(b)], index, config, echoSummarizer);
    expect(result.entries.map((e) => e.customType)).toEqual(["context-prune-index", "context-prune-summary", "context-prune-frontier"]);
    const summary = result.entries[1] as Extract<PersistEntry, { kind: "message" }>;
    expect(summary.content).toMatch(/^- `t1` read/m);
    expect(summary.content).toMatch(/^- `t2` grep/m);
    expect(summary.content).toContain("Pruned refs: `t1`, `t2`");
    expect(summary.content).toContain(QUERY_TOOL);
    expect((result.entries[2] as { data: { outcome: string } }).data.outcome).toBe("summarized");
    expect(result.usage).toEqual({ input: 100, output: 20, cost: 0.001 });
  });

  it("a batch under minBatchChars is skipped without a summarizer call and the frontier advances", async () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "git status" }, "clean");
    let calls = 0;
    const counting: Summarizer = async (r) => (calls++, echoSummarizer(r));
    const index = emptyIndex();
    const result = await flushBatches([oneBatch(b)], index, config, counting);
    expect(calls).toBe(0);
    expect(result.entries.map((e) => e.customType)).toEqual(["context-prune-frontier"]);
    expect(index.frontier?.outcome).toBe("skipped-trivial");
    // The same calls are not reconsidered.
    const again = await flushBatches([oneBatch(b)], index, config, counting);
    expect(again.entries).toEqual([]);
  });

  it("a re-read of identical content becomes an alias of the original, with no summarizer call", async () => {
    const b = new SessionBuilder().user("go").toolUse("read", { path: "a.ts" }, big("same"));
    const index = emptyIndex();
    const first = await flushBatches([oneBatch(b)], index, config, echoSummarizer);
    persist(b, first.entries);
    b.user("again").toolUse("read", { path: "a.ts" }, big("same") + "\n  \n");
    let calls = 0;
    const second = await flushBatches([oneBatch(b)], index, config, async (r) => (calls++, echoSummarizer(r)));
    expect(calls).toBe(0);
    expect(second.entries.map((e) => e.customType)).toEqual(["context-prune-dedup-alias", "context-prune-frontier"]);
    persist(b, second.entries);
    // Both reads render as stubs that name the same ref.
    const rebuilt = rebuildIndex(b.entries).index;
    const rendered = renderModelView(contextOf(b), rebuilt, config).messages;
    const stubs = resultTexts(rendered);
    expect(stubs).toHaveLength(2);
    expect(stubs[0]).toContain("`t1`");
    expect(stubs[1]).toBe(stubs[0]);
  });

  it("records an older tool wrote without a content hash still catch a re-read, matched to the first identical output", async () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a.ts" } }, { name: "read", args: { path: "copy-of-a.ts" } }] });
    b.toolResult("call_1", "read", big("same")).toolResult("call_2", "read", big("same"));
    const first = await flushBatches([oneBatch(b)], emptyIndex(), config, echoSummarizer);
    // As pi-condense 2.x wrote them: no contentHash on the records.
    for (const e of first.entries) {
      const calls = e.kind === "custom" ? (e.data as { toolCalls?: Record<string, unknown>[] } | undefined)?.toolCalls : undefined;
      for (const record of calls ?? []) delete record.contentHash;
    }
    persist(b, first.entries);
    const index = rebuildIndex(b.entries).index;
    expect([...index.calls.values()].every((c) => c.record.contentHash === undefined)).toBe(true);
    b.user("again").toolUse("read", { path: "a.ts" }, big("same"));
    const second = await flushBatches([oneBatch(b)], index, config, echoSummarizer);
    const alias = second.entries.find((e) => e.customType === "context-prune-dedup-alias");
    expect(alias?.kind === "custom" ? (alias.data as { originalToolCallId?: string }).originalToolCallId : undefined).toBe("call_1");
  });

  it("a summary not smaller than its input is skipped as oversized", async () => {
    const b = new SessionBuilder().user("go").toolUse("read", { path: "a.ts" }, big("a", 1100));
    const verbose: Summarizer = async () => ({ text: `- \`t1\` ${"very long ".repeat(200)}` });
    const index = emptyIndex();
    const result = await flushBatches([oneBatch(b)], index, config, verbose);
    expect(result.entries.map((e) => e.customType)).toEqual(["context-prune-frontier"]);
    expect(index.frontier?.outcome).toBe("skipped-oversized");
    expect(index.calls.size).toBe(0);
  });

  it("a failing summarizer persists nothing and leaves the batch for the next flush", async () => {
    const b = new SessionBuilder().user("go").toolUse("read", { path: "a.ts" }, big("a"));
    const index = emptyIndex();
    const failing: Summarizer = async () => {
      throw new Error("HTTP 500");
    };
    const result = await flushBatches([oneBatch(b)], index, config, failing);
    expect(result.entries).toEqual([]);
    expect(result.retry).toHaveLength(1);
    expect(result.outcomes[0]).toMatchObject({ outcome: "failed", error: "HTTP 500" });
    expect(index.calls.size).toBe(0);
    expect(index.frontier).toBeUndefined();
    const retried = await flushBatches(result.retry, index, config, echoSummarizer);
    expect(retried.outcomes[0]!.outcome).toBe("summarized");
  });

  it("an empty answer is a failure, not an empty summary", async () => {
    const b = new SessionBuilder().user("go").toolUse("read", { path: "a.ts" }, big("a"));
    const result = await flushBatches([oneBatch(b)], emptyIndex(), config, async () => ({ text: "  " }));
    expect(result.entries).toEqual([]);
    expect(result.outcomes[0]!.outcome).toBe("failed");
  });

  it("refs the summarizer invents are removed, and a call it forgot still gets a bullet", async () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a.ts" } }, { name: "read", args: { path: "b.ts" } }] });
    b.toolResult("call_1", "read", big("a")).toolResult("call_2", "read", big("b"));
    const inventive: Summarizer = async () => ({ text: "- `t1` read a.ts\n- `t7` something that never happened" });
    const result = await flushBatches([oneBatch(b)], emptyIndex(), config, inventive);
    const summary = (result.entries[1] as { content: string }).content;
    expect(summary).not.toContain("`t7`");
    expect(summary).toMatch(/`t2` read b\.ts/);
  });
});

describe("spill", () => {
  it("a result at spillThreshold is written to a sidecar first and indexed at once with a preview", () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "cat huge.log" }, "L".repeat(70_000));
    const { assistant, results } = lastTurn(b);
    const batch = captureBatch(assistant, results, 1, config).batch!;
    const index = emptyIndex();
    const written: string[] = [];
    const out = spillOversized(batch, index, config, { writeSidecar: (c) => (written.push(c.resultText), `/blobs/${c.toolCallId}.txt`) });
    expect(written).toEqual(["L".repeat(70_000)]);
    expect(out.rest).toBeUndefined();
    const data = (out.entries[0] as { data: { toolCalls: { resultText: string; spillPath: string; spillBytes: number; resultPreview: string }[] } }).data;
    expect(data.toolCalls[0]).toMatchObject({ resultText: "", spillPath: "/blobs/call_1.txt", spillBytes: 70_000 });
    expect(data.toolCalls[0]!.resultPreview).toHaveLength(config.spillPreviewBytes);
    persist(b, out.entries);
    const rendered = renderModelView(contextOf(b), rebuildIndex(b.entries).index, config).messages;
    const stub = resultTexts(rendered)[0]!;
    expect(stub).toContain("70000 bytes");
    expect(stub).toContain("/blobs/call_1.txt");
    expect(stub.length).toBeLessThan(1_500);
  });

  it("a failed sidecar write leaves the result inline for the normal flush", () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "cat huge.log" }, "L".repeat(70_000));
    const { assistant, results } = lastTurn(b);
    const batch = captureBatch(assistant, results, 1, config).batch!;
    const out = spillOversized(batch, emptyIndex(), config, {
      writeSidecar: () => {
        throw new Error("EACCES");
      },
    });
    expect(out.entries).toEqual([]);
    expect(out.failures[0]!.error).toBe("EACCES");
    expect(out.rest?.calls).toHaveLength(1);
  });
});

describe("render", () => {
  async function prunedSession() {
    const b = new SessionBuilder().user("fix the build");
    b.assistant({ toolCalls: [{ name: "read", args: { path: "src/a.ts" } }, { name: "read", args: { path: "docs/guide.md" } }] });
    b.toolResult("call_1", "read", big("A")).toolResult("call_2", "read", big("guide"));
    b.assistant("done");
    const { assistant, results } = (() => {
      const m = messagesOf(b);
      return { assistant: m[1] as AssistantMessage, results: [m[2], m[3]] as ToolResultMessage[] };
    })();
    const index = emptyIndex();
    const flushed = await flushBatches([captureBatch(assistant, results, 1, config).batch!], index, config, echoSummarizer);
    persist(b, flushed.entries);
    return { b, index };
  }

  it("summarized results become stubs that keep the call id and name and are not errors", async () => {
    const { b, index } = await prunedSession();
    const input = contextOf(b);
    const out = renderModelView(input, index, config).messages;
    const stubs = out.filter((m) => m.role === "toolResult") as ToolResultMessage[];
    expect(stubs.map((s) => [s.toolCallId, s.toolName, s.isError])).toEqual([
      ["call_1", "read", false],
      ["call_2", "read", false],
    ]);
    expect(contentText(stubs[0]!.content)).toContain("`t1`");
    expect(contentText(stubs[0]!.content)).not.toContain("xxxx");
    // The input is not mutated.
    expect(resultTexts(input)[0]).toContain("xxxx");
  });

  it("rendering twice gives the same bytes, and a rebuild from the session renders identically", async () => {
    const { b, index } = await prunedSession();
    const first = JSON.stringify(renderModelView(contextOf(b), index, config).messages);
    const second = JSON.stringify(renderModelView(contextOf(b), index, config).messages);
    const rebuilt = JSON.stringify(renderModelView(contextOf(b), rebuildIndex(b.entries).index, config).messages);
    expect(second).toBe(first);
    expect(rebuilt).toBe(first);
  });

  it("nothing to prune gives back the very same array", () => {
    const b = new SessionBuilder().user("hi").toolUse("read", { path: "a" }, "x").assistant("ok");
    const input = contextOf(b);
    expect(renderModelView(input, emptyIndex(), config).messages).toBe(input);
    expect(renderModelView(input, rebuildIndex(b.entries).index, config).messages).toBe(input);
  });

  it("a record whose path is now protected stays verbatim (render-time re-check)", async () => {
    const { b, index } = await prunedSession();
    const protectingDocs = { ...config, protectedPaths: ["docs/**"] };
    const out = renderModelView(contextOf(b), index, protectingDocs).messages;
    const texts = resultTexts(out);
    expect(texts[0]).toContain("`t1`");
    expect(texts[1]).toContain("xxxx");
  });

  it("turned off, the pruner sends everything raw", async () => {
    const { b, index } = await prunedSession();
    const input = contextOf(b);
    expect(renderModelView(input, index, { ...config, enabled: false }).messages).toBe(input);
  });

  it("a reused tool-call id stubs only the occurrence that was summarized", async () => {
    const { b, index } = await prunedSession();
    b.user("next").toolUse("read", { path: "src/b.ts" }, big("fresh B"), { id: "call_1" });
    const texts = resultTexts(renderModelView(contextOf(b), index, config).messages);
    expect(texts).toHaveLength(3);
    expect(texts[0]).toContain("`t1`");
    expect(texts[2]).toContain("fresh B");
  });

  it("recovered output is not re-stubbed until recoveryGraceTurns user turns have passed", async () => {
    const { b, index } = await prunedSession();
    b.user("show me t1 again").toolUse(QUERY_TOOL, { toolCallIds: ["t1"] }, big("recovered A"), { id: "q1" }).assistant("here");
    // Summarize the query result too, as a later flush would.
    const m = messagesOf(b);
    const flushed = await flushBatches([captureBatch(m[m.length - 3] as AssistantMessage, [m[m.length - 2] as ToolResultMessage], 2, config).batch!], index, config, echoSummarizer);
    persist(b, flushed.entries);
    const queryText = () => resultTexts(renderModelView(contextOf(b), index, config).messages)[2]!;
    expect(queryText()).toContain("recovered A");
    b.user("one").assistant("a").user("two").assistant("b");
    expect(queryText()).toContain("recovered A");
    b.user("three").assistant("c");
    expect(queryText()).toContain("`t3`");
  });
});
