// Pi hands the `context` handler a fresh deep copy of the context on every request, and the render
// remembers the previous request (in the memo its caller keeps) by what survives a copy (its
// messages' fingerprints).
// This checks that what is remembered never changes what is sent: request after request, with
// turns appended, flushes and chain compressions growing the same index in place, and settings
// changed in between, rendering a fresh copy gives exactly what the whole render of the original
// gives, and an unchanged request still comes back as the very array that was handed in.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { echoSummarizer, persist, piContext } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { captureBatch, flushBatches, type Batch } from "../../../core/src/prune/flush.ts";
import { compressChains } from "../../../core/src/prune/chain-plan.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { createRenderMemo, renderModelView, renderWhole } from "../../../core/src/render/render.ts";
import { QUERY_TOOL } from "../../../core/src/shapes/entries.ts";
import type { AssistantMessage, ToolResultMessage } from "../../../core/src/shapes/messages.ts";

const callArb = fc.record({
  tool: fc.constantFrom("read", "bash", "write", QUERY_TOOL),
  path: fc.constantFrom("src/a.ts", "src/b.ts", "skills/x/SKILL.md"),
  big: fc.boolean(),
  bigArgs: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
  isError: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
});

const stepArb = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("user" as const) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("tools" as const), calls: fc.array(callArb, { minLength: 1, maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("reply" as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("flush" as const), compress: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("protect" as const), what: fc.constantFrom("bash", "paths", "none") }) },
);

const configArb = fc.record({
  cacheAware: fc.boolean(),
  cooldownTurns: fc.integer({ min: 0, max: 3 }),
  recoveryGraceTurns: fc.integer({ min: 0, max: 3 }),
  thinkingStrip: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
});

describe("rendering fresh copies, request after request", () => {
  it("a fresh deep copy renders exactly as the original does, and an unchanged request comes back as the same array", async () => {
    // Both kinds of request must really occur, or the test would say nothing about one of them.
    const seen = { unchanged: 0, changed: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), configArb, async (steps, c) => {
        let config: PruneConfig = {
          ...DEFAULT_CONFIG,
          cacheAware: c.cacheAware,
          recoveryGraceTurns: c.recoveryGraceTurns,
          purgeErrors: { enabled: true, cooldownTurns: c.cooldownTurns, minArgChars: 100 },
          thinkingStrip: { enabled: c.thinkingStrip, keepLastTurns: 1 },
          chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 1 },
        };
        const b = new SessionBuilder();
        // One index for the whole session, grown in place by flushes and compressions as the live pruner does.
        const index = emptyIndex();
        // And one memory of the previous request, as the live pruner keeps.
        const memo = createRenderMemo();
        let pending: Batch[] = [];
        let requests = 0;
        const request = () => {
          const original = piContext(b);
          const expected = renderWhole(original, index, config);
          const copy = structuredClone(original);
          const got = renderModelView(copy, index, config, undefined, memo);
          expect(got.messages).toEqual(expected.messages);
          expect(got.stats).toEqual(expected.stats);
          if (expected.messages === original) {
            expect(got.messages).toBe(copy);
            seen.unchanged++;
          } else seen.changed++;
          requests++;
        };
        b.user("start");
        request();
        for (const step of steps) {
          if (step.kind === "user") b.user(`prompt ${requests}`);
          else if (step.kind === "reply") b.assistant({ thinking: `why ${requests}`, text: `done ${requests}` });
          else if (step.kind === "tools") {
            b.assistant({
              thinking: `plan ${requests}`,
              toolCalls: step.calls.map((call) => ({ name: call.tool, args: call.bigArgs ? { path: call.path, content: "y".repeat(300) } : { path: call.path } })),
            });
            const ids = b.lastToolCallIds;
            step.calls.forEach((call, i) => b.toolResult(ids[i]!, call.tool, `${call.tool} ${call.path}\n${"x".repeat(call.big ? 1200 : 10)}`, { isError: call.isError }));
            const messages = piContext(b);
            const results = messages.slice(-step.calls.length) as ToolResultMessage[];
            const { batch } = captureBatch(messages[messages.length - step.calls.length - 1] as AssistantMessage, results, requests, config);
            if (batch) pending.push(batch);
          } else if (step.kind === "flush") {
            if (pending.length) persist(b, (await flushBatches(pending, index, config, echoSummarizer)).entries);
            pending = [];
            if (step.compress) persist(b, (await compressChains(piContext(b), index, config, echoSummarizer)).entries);
          } else {
            const protectedTools = step.what === "bash" ? [...config.protectedTools, "bash"] : config.protectedTools;
            const protectedPaths = step.what === "paths" ? [...config.protectedPaths, "src/b.ts"] : config.protectedPaths;
            config = { ...config, protectedTools, protectedPaths };
          }
          request();
          // The same request again (a retry): nothing new, the remembered render is reused whole.
          request();
        }
      }),
      { numRuns: 300 },
    );
    expect(seen.unchanged).toBeGreaterThan(300);
    expect(seen.changed).toBeGreaterThan(300);
  });
});
