// The flush pipeline: which results of a turn are captured, how a batch is summarized, skipped,
// aliased or retried, and how an oversized result is spilled to a sidecar first.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, echoSummarizer, freshIndex, lastBatch, lastTurn, persist, piContext, resultTexts } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches, spillOversized } from "../../../core/src/prune/flush.ts";
import { type PersistEntry } from "../../../core/src/shapes/entries.ts";
import { emptyIndex, rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import type { Summarizer } from "../../../core/src/prune/summarizer-prompts.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths], protectedTools: [] };

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
  const oneBatch = (b: SessionBuilder) => lastBatch(b, config);

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
    // The footer lists the refs and ends the summary; how to use them is in the query tool's declaration.
    expect(summary.content.endsWith("Pruned refs: `t1`, `t2`.")).toBe(true);
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
    const rendered = renderModelView(piContext(b), freshIndex(b), config).messages;
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
    const batch = lastBatch(b, config);
    const index = emptyIndex();
    const written: string[] = [];
    const out = spillOversized(batch, index, config, { write: (c) => (written.push(c.resultText), `/blobs/${c.toolCallId}.txt`) });
    expect(written).toEqual(["L".repeat(70_000)]);
    expect(out.rest).toBeUndefined();
    const data = (out.entries[0] as { data: { toolCalls: { resultText: string; spillPath: string; spillBytes: number; resultPreview: string }[] } }).data;
    expect(data.toolCalls[0]).toMatchObject({ resultText: "", spillPath: "/blobs/call_1.txt", spillBytes: 70_000 });
    expect(data.toolCalls[0]!.resultPreview).toHaveLength(config.spillPreviewBytes);
    persist(b, out.entries);
    const rendered = renderModelView(piContext(b), freshIndex(b), config).messages;
    const stub = resultTexts(rendered)[0]!;
    expect(stub).toContain("70000 bytes");
    expect(stub).toContain("/blobs/call_1.txt");
    expect(stub.length).toBeLessThan(1_500);
  });

  it("a failed sidecar write leaves the result inline for the normal flush", () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "cat huge.log" }, "L".repeat(70_000));
    const out = spillOversized(lastBatch(b, config), emptyIndex(), config, {
      write: () => {
        throw new Error("EACCES");
      },
    });
    expect(out.entries).toEqual([]);
    expect(out.failures[0]!.error).toBe("EACCES");
    expect(out.rest?.calls).toHaveLength(1);
  });
});
