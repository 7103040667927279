// The live render compares Pi's fresh copy of the context with the last request at a few places
// only (the first message and those 1, 2, 3, 5, 9, … places before its end), and then renders
// only what was appended. This checks, through PrunerRuntime.render as the `context` handler runs
// it, that what is sent is always exactly what the whole render of the request gives: request
// after request, with turns appended, flushes and chain compressions growing the index in place,
// settings changed, answers retried, branches switched and Pi's compaction in between.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { appendPrompt, appendToolTurn, configArb, drawnConfig, flushInto, sessionSteps, withProtection } from "../helpers/render-steps.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../core/src/settings/config.ts";
import type { Batch } from "../../core/src/prune/flush.ts";
import { emptyIndex } from "../../core/src/prune/prune-index.ts";
import { createRenderMemo, renderModelView, renderWhole } from "../../core/src/render/render.ts";
import { CompactionResendReader } from "../../core/src/render/compaction-protect.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { EMPTY_CONTROLS } from "../../core/src/control/control-entries.ts";
import type { AnyEntry } from "../../core/src/shapes/entries.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";
import { PrunerRuntime } from "../../pi-extension/src/runtime.ts";
import { OnceReporter } from "../../pi-extension/src/once-reporter.ts";

/** The builder's current branch, root → leaf (its entries hold every branch). */
function branchOf(b: SessionBuilder): AnyEntry[] {
  const byId = new Map(b.entries.map((e) => [e.id, e]));
  const branch: AnyEntry[] = [];
  for (let id = b.leafId; id !== null; ) {
    const entry = byId.get(id)!;
    branch.unshift(entry);
    id = entry.parentId;
  }
  return branch;
}

const contextOf = (b: SessionBuilder): AgentMessage[] => buildPiContext(branchOf(b)).map((c) => c.message);

function runtimeWith(config: PruneConfig) {
  const problems: string[] = [];
  const rt = new PrunerRuntime(config, new OnceReporter((m) => problems.push(m)));
  return { rt, problems };
}

const stepArb = fc.oneof(
  ...sessionSteps(6),
  // The last answer replaced (Pi retries a failed request, or the user edits and resends).
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("retry" as const) }) },
  // Another branch from an earlier turn (without the rebuild the runtime would do: harder on the memo).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("branch" as const), back: fc.integer({ min: 1, max: 6 }) }) },
  // Pi's compaction, keeping the turns from an earlier user message on.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("compact" as const), back: fc.integer({ min: 0, max: 4 }) }) },
);

describe("the live render reuses the last request", () => {
  it("what is sent is exactly the whole render of the request, whatever happened between two requests", async () => {
    // Each way of rendering must really occur, or the test would say nothing about it.
    const seen = { unchanged: 0, changed: 0 };
    const renders = { whole: 0, appended: 0, same: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), configArb(5), async (steps, c) => {
        let config: PruneConfig = drawnConfig(c);
        const b = new SessionBuilder();
        // One index for the session, grown in place by flushes and compressions as the live pruner does.
        const index = emptyIndex();
        const { rt, problems } = runtimeWith(config);
        rt.index = index;
        const resends = new CompactionResendReader();
        const turnStarts: (string | null)[] = [];
        const userIds: string[] = [];
        let pending: Batch[] = [];
        let requests = 0;
        const request = () => {
          const original = contextOf(b);
          const resend = resends.read(branchOf(b), config);
          const expected = renderWhole(original, index, config, undefined, undefined, resend);
          const copy = structuredClone(original);
          const sent = rt.render(copy, EMPTY_CONTROLS, resend);
          expect(sent).toEqual(expected.messages);
          if (expected.messages === original) {
            expect(sent).toBe(copy);
            seen.unchanged++;
          } else seen.changed++;
          requests++;
        };
        b.user("start");
        userIds.push(b.lastId);
        request();
        for (const step of steps) {
          if (step.kind === "user") {
            appendPrompt(b, step.shell, requests);
            userIds.push(b.lastId);
          } else if (step.kind === "reply") {
            turnStarts.push(b.leafId);
            b.assistant({ thinking: `why ${requests}`, text: `done ${requests}` });
          } else if (step.kind === "tools") {
            turnStarts.push(b.leafId);
            const batch = appendToolTurn(b, step.calls, requests, config, contextOf);
            if (batch) pending.push(batch);
          } else if (step.kind === "flush") {
            await flushInto(b, pending, index, config, step.compress, contextOf);
            pending = [];
          } else if (step.kind === "protect") {
            config = withProtection(config, step.what);
            rt.config = config;
          } else if (step.kind === "retry") {
            const start = turnStarts.at(-1);
            if (start === undefined) continue;
            b.branchFrom(start).assistant({ text: `again ${requests}` });
          } else if (step.kind === "branch") {
            const start = turnStarts.at(-step.back);
            if (start === undefined) continue;
            b.branchFrom(start).user(`instead ${requests}`);
            userIds.push(b.lastId);
          } else {
            const kept = userIds.at(-1 - step.back);
            if (kept === undefined || !branchOf(b).some((e) => e.id === kept)) continue;
            b.compaction({ firstKeptEntryId: kept, summary: `compacted at ${requests}` });
          }
          request();
          // The same request again (a retry of the same request): the remembered render is reused whole.
          request();
        }
        expect(problems).toEqual([]);
        for (const key of ["whole", "appended", "same"] as const) renders[key] += rt.renderMemo.renders[key];
      }),
      { numRuns: 300 },
    );
    expect(seen.unchanged).toBeGreaterThan(300);
    expect(seen.changed).toBeGreaterThan(300);
    expect(renders.appended).toBeGreaterThan(300);
    expect(renders.same).toBeGreaterThan(300);
    expect(renders.whole).toBeGreaterThan(300);
  });
});

describe("what the comparison at a few places sees", () => {
  // Sixty turns of a read and its result; the last request before the change is rendered first.
  function longSession(): SessionBuilder {
    const b = new SessionBuilder();
    for (let turn = 0; turn < 60; turn++) {
      b.user(`step ${turn}`);
      b.assistant({ toolCalls: [{ name: "read", args: { path: `src/f${turn}.ts` } }] });
      b.toolResult(b.lastToolCallIds[0]!, "read", `contents ${turn}`);
      b.assistant(`read ${turn}`);
    }
    return b;
  }

  /** A runtime that has rendered `b`'s context, and the memo's render counts after the next request. */
  function afterNext(b: SessionBuilder, next: AgentMessage[]) {
    const { rt } = runtimeWith(DEFAULT_CONFIG);
    rt.render(structuredClone(contextOf(b)));
    const before = { ...rt.renderMemo.renders };
    const sent = rt.render(structuredClone(next));
    return { sent, whole: rt.renderMemo.renders.whole - before.whole, appended: rt.renderMemo.renders.appended - before.appended };
  }

  it("a request that appends a turn renders only the turn", () => {
    const b = longSession();
    const grown = contextOf(longSession().user("one more").assistant("sure"));
    const { sent, whole, appended } = afterNext(b, grown);
    expect(sent).toEqual(grown);
    expect(appended).toBe(1);
    expect(whole).toBe(0);
  });

  it("a message dropped far back is seen: every remembered place after it holds another message", () => {
    const b = longSession();
    const next = contextOf(longSession().user("one more").assistant("sure").user("and another"));
    // A message dropped near the start (Pi never does; another extension's handler before ours might).
    next.splice(5, 1);
    const { sent, whole } = afterNext(b, next);
    expect(whole).toBe(1);
    expect(sent).toEqual(renderModelView(next, emptyIndex(), DEFAULT_CONFIG).messages);
  });

  it("Pi's compaction is seen though what follows its summary is longer than the last request", () => {
    const b = longSession();
    const compacted = longSession();
    compacted.compaction({ firstKeptEntryId: compacted.entries[8]!.id });
    for (let turn = 0; turn < 10; turn++) compacted.user(`after ${turn}`).assistant(`ok ${turn}`);
    const next = contextOf(compacted);
    expect(next.length).toBeGreaterThanOrEqual(contextOf(b).length);
    const { sent, whole } = afterNext(b, next);
    expect(whole).toBe(1);
    expect(sent[0]!.role).toBe("compactionSummary");
  });

  it("a retried answer is seen: the last remembered message is another one", () => {
    const b = longSession();
    const retried = longSession();
    // The last answer replaced by a new one, and the conversation goes on past the old length.
    retried.branchFrom(retried.entries[retried.entries.length - 2]!.id).assistant("read 59, said differently").user("thanks");
    const { whole } = afterNext(b, contextOf(retried));
    expect(whole).toBe(1);
  });

  it("a view's memo compares every message: one replaced in place between two sampled places is seen", () => {
    const b = longSession();
    const first = contextOf(b);
    const memo = createRenderMemo();
    renderModelView(first, emptyIndex(), DEFAULT_CONFIG, undefined, memo);
    const next = structuredClone(contextOf(longSession().user("one more")));
    // Position 20 is none of the sampled places of 240 messages (0, 239, 238, 237, 235, 231, …, 113).
    next[20] = { role: "user", content: "replaced", timestamp: next[20]!.timestamp + 1 };
    renderModelView(next, emptyIndex(), DEFAULT_CONFIG, undefined, memo);
    expect(memo.renders).toEqual({ whole: 2, appended: 0, same: 0 });
  });
});
