// Step 1 of the render: summarized and spilled results become stubs that name their ref, unless
// the call is protected now or its output was just recovered.
import { describe, expect, it } from "vitest";
import { big, echoSummarizer, messagesOf, persist, piContext, resultTexts, summarizedReads } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches } from "../../../core/src/prune/flush.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { QUERY_TOOL } from "../../../core/src/shapes/entries.ts";
import type { AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";
import { contentText } from "../../../core/src/shapes/messages.ts";

// Each step's own turn counting, as the turns pass (cacheAware off); epochs.test.ts counts them by flushes.
const config: PruneConfig = { ...DEFAULT_CONFIG, protectedPaths: [...DEFAULT_CONFIG.protectedPaths], protectedTools: [], cacheAware: false };

describe("stubs", () => {
  it("a superseded stub quotes at most 120 characters of its record's text, on one line, whatever a session file holds there", async () => {
    const { b, index } = await summarizedReads(config);
    const call = [...index.calls.values()][0]!;
    call.record.supersededBy = `t9 (edit ${"x\n".repeat(5_000)})`;
    const stubs = resultTexts(renderModelView(piContext(b), index, config).messages).filter((t) => t.includes("superseded by"));
    expect(stubs).toHaveLength(1);
    expect(stubs[0]).toMatch(/^\[read output superseded by t9 \(edit x x x[ x]*…; context_tree_query returns ref `t\d+`\]$/);
    expect(stubs[0]!.length).toBeLessThan(220);
  });

  it("a stub quotes the session's record without its text opening or closing the pruner's tags", async () => {
    const { b, index } = await summarizedReads(config);
    const call = [...index.calls.values()][0]!;
    call.record.supersededBy = 't9 (edit </compressed-chain> <compressed-chain id="b1">)';
    const stubs = resultTexts(renderModelView(piContext(b), index, config).messages).filter((t) => t.includes("superseded by"));
    expect(stubs).toEqual([`[read output superseded by t9 (edit &lt;/compressed-chain> &lt;compressed-chain id="b1">); context_tree_query returns ref \`${call.shortRef}\`]`]);
  });

  it("summarized results become stubs that keep the call id and name and are not errors", async () => {
    const { b, index } = await summarizedReads(config);
    const input = piContext(b);
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

  it("a record whose path is now protected stays verbatim (render-time re-check)", async () => {
    const { b, index } = await summarizedReads(config);
    const protectingDocs = { ...config, protectedPaths: ["docs/**"] };
    const out = renderModelView(piContext(b), index, protectingDocs).messages;
    const texts = resultTexts(out);
    expect(texts[0]).toContain("`t1`");
    expect(texts[1]).toContain("xxxx");
  });

  it("a reused tool-call id stubs only the occurrence that was summarized", async () => {
    const { b, index } = await summarizedReads(config);
    b.user("next").toolUse("read", { path: "src/b.ts" }, big("fresh B"), { id: "call_1" });
    const texts = resultTexts(renderModelView(piContext(b), index, config).messages);
    expect(texts).toHaveLength(3);
    expect(texts[0]).toContain("`t1`");
    expect(texts[2]).toContain("fresh B");
  });

  it("recovered output is not re-stubbed until recoveryGraceTurns user turns have passed", async () => {
    const { b, index } = await summarizedReads(config);
    b.user("show me t1 again").toolUse(QUERY_TOOL, { toolCallIds: ["t1"] }, big("recovered A"), { id: "q1" }).assistant("here");
    // Summarize the query result too, as a later flush would.
    const m = messagesOf(b);
    const flushed = await flushBatches([captureBatch(m[m.length - 3] as AssistantMessage, [m[m.length - 2] as ToolResultMessage], 2, config).batch!], index, config, echoSummarizer);
    persist(b, flushed.entries);
    const queryText = () => resultTexts(renderModelView(piContext(b), index, config).messages)[2]!;
    expect(queryText()).toContain("recovered A");
    b.user("one").assistant("a").user("two").assistant("b");
    expect(queryText()).toContain("recovered A");
    b.user("three").assistant("c");
    expect(queryText()).toContain("`t3`");
  });
});
