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
import { piContext } from "../../helpers/prune-session.ts";
import { appendPrompt, appendToolTurn, configArb, drawnConfig, flushInto, sessionSteps, withProtection } from "../../helpers/render-steps.ts";
import type { PruneConfig } from "../../../core/src/settings/config.ts";
import type { Batch } from "../../../core/src/prune/flush.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { createRenderMemo, renderModelView, renderWhole } from "../../../core/src/render/render.ts";

const stepArb = fc.oneof(...sessionSteps(5));

describe("rendering fresh copies, request after request", () => {
  it("a fresh deep copy renders exactly as the original does, and an unchanged request comes back as the same array", async () => {
    // Both kinds of request must really occur, or the test would say nothing about one of them.
    const seen = { unchanged: 0, changed: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), configArb(4), async (steps, c) => {
        let config: PruneConfig = drawnConfig(c);
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
          if (step.kind === "user") appendPrompt(b, step.shell, requests);
          else if (step.kind === "reply") b.assistant({ thinking: `why ${requests}`, text: `done ${requests}` });
          else if (step.kind === "tools") {
            const batch = appendToolTurn(b, step.calls, requests, config, piContext);
            if (batch) pending.push(batch);
          } else if (step.kind === "flush") {
            await flushInto(b, pending, index, config, step.compress, piContext);
            pending = [];
          } else config = withProtection(config, step.what);
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
