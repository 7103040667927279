// Request views rendered in one pass over a branch carry Pi's context, the index, the markers and
// the render's memory forward from request to request; each must be the view a renderer asked for
// that request alone builds from the entries before it. Random sessions with flushes through the
// real flush, chain entries, compactions, context edits, branch switches, rewinds and shrinks
// (some retired as stale while a request was sent) and settings changes; the timeline built in
// pieces and carried on as the branch grows is the one built whole.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { MulliganMarkers } from "../../helpers/mulligan-sessions.ts";
import { big, echoSummarizer, freshIndex, lastBatch, persist } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, mergeConfigLayers } from "../../../core/src/settings/config.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { parseSessionText, getBranch } from "../../../core/src/session/session-reader.ts";
import { PRUNE_SETTINGS, type AnyEntry } from "../../../core/src/shapes/entries.ts";
import { recordedConfig } from "../../../core/src/view/recorded-settings.ts";
import { RequestRenderer } from "../../../core/src/view/request-views.ts";
import { branchPointsOf, TimelineBuilder } from "../../../core/src/view/timeline.ts";

type Step =
  | { kind: "prompt" }
  | { kind: "reply" }
  | { kind: "calls"; count: number; error: boolean }
  | { kind: "flush" }
  | { kind: "chain"; back: number }
  | { kind: "compaction"; back: number }
  | { kind: "edit"; back: number }
  | { kind: "branch"; back: number }
  | { kind: "rewind" }
  | { kind: "shrink"; stale: boolean }
  | { kind: "settings"; grace: number };

const back = fc.integer({ min: 1, max: 12 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: "prompt" as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: "reply" as const }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("calls" as const), count: fc.integer({ min: 1, max: 3 }), error: fc.boolean() }) },
  { weight: 4, arbitrary: fc.constant({ kind: "flush" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("chain" as const), back }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("compaction" as const), back }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("edit" as const), back }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("branch" as const), back }) },
  { weight: 1, arbitrary: fc.constant({ kind: "rewind" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("shrink" as const), stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("settings" as const), grace: fc.integer({ min: 0, max: 2 }) }) },
);

const messageEntries = (b: SessionBuilder, role?: string) =>
  b.entries.filter((e) => e.type === "message" && (!role || (e as { message: { role: string } }).message.role === role));

async function play(steps: readonly Step[]): Promise<SessionBuilder> {
  const b = new SessionBuilder();
  const markers = new MulliganMarkers(b);
  let config = DEFAULT_CONFIG;
  let calls = 0;
  let uncaptured = false;
  b.user("start");
  for (const step of steps) {
    switch (step.kind) {
      case "prompt":
        b.user(`prompt ${b.entries.length}`);
        break;
      case "reply":
        b.assistant(`reply ${b.entries.length}`);
        break;
      case "calls": {
        const specs = Array.from({ length: step.count }, () => ({ name: calls % 3 === 2 ? "bash" : "read", args: { path: `src/f${calls++ % 4}.ts` } }));
        b.assistant({ text: "working", toolCalls: specs });
        b.lastToolCallIds.forEach((id, i) => b.toolResult(id, specs[i]!.name, big(`out ${id}`), { isError: step.error && i === 0 }));
        uncaptured = true;
        break;
      }
      case "flush": {
        if (!uncaptured) break;
        uncaptured = false;
        const batch = lastBatch(b, config);
        if (batch) persist(b, (await flushBatches([batch], freshIndex(b), config, echoSummarizer)).entries);
        break;
      }
      case "chain": {
        const users = messageEntries(b, "user");
        const assistants = messageEntries(b, "assistant");
        const start = users[Math.max(0, users.length - step.back)] as { message: { timestamp: number } };
        const final = assistants.at(-1) as { message: { timestamp: number } } | undefined;
        b.custom("context-prune-chain", {
          blockId: `b${b.entries.length}`,
          startUserTimestamp: start.message.timestamp,
          ...(final ? { finalAssistantTimestamp: final.message.timestamp } : {}),
          droppedOccurrenceKeys: [],
          toolRefs: [],
          rangeSummaryText: "a chain of reads",
        });
        break;
      }
      case "compaction": {
        const kept = messageEntries(b).at(-step.back) ?? messageEntries(b)[0]!;
        b.compaction({ firstKeptEntryId: kept.id, summary: "earlier work" });
        break;
      }
      case "edit": {
        const target = messageEntries(b, "user").at(-step.back);
        if (target) b.contextEdit(target.id, `edited ${target.id}`);
        break;
      }
      case "branch": {
        const from = messageEntries(b).at(-step.back - 1);
        if (from) b.branchFrom(from.id);
        uncaptured = false;
        break;
      }
      case "rewind": {
        const last = messageEntries(b).slice(-2).map((e) => e.id);
        markers.rewind({ id: `r${b.entries.length}`, granularity: "last_tool_call_group", hideEntryIds: last });
        break;
      }
      case "shrink": {
        const result = messageEntries(b, "toolResult").at(-1);
        if (!result) break;
        const id = `s${b.entries.length}`;
        markers.shrink({ id, target: { by_tool_call_id: (result as { message: { toolCallId: string } }).message.toolCallId }, replacement: "shrunk", pinnedEntryId: result.id });
        b.user("after the shrink").assistant("noted");
        if (step.stale) markers.cancel(id, "stale");
        break;
      }
      case "settings":
        config = mergeConfigLayers(DEFAULT_CONFIG, { recoveryGraceTurns: step.grace, cacheAware: step.grace !== 1 });
        b.custom(PRUNE_SETTINGS, { version: "0.1.0", config: recordedConfig(config) });
        break;
    }
  }
  b.assistant("done");
  return b;
}

const options = { config: DEFAULT_CONFIG };

describe("request views carried forward", () => {
  it("each request of a pass in order is the view of that request rendered alone", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 10, maxLength: 60 }), async (steps) => {
        const b = await play(steps);
        const branch = getBranch(parseSessionText(b.toJsonl())).entries;
        const inOrder = new RequestRenderer(branch, options);
        for (let n = 1; n <= inOrder.count; n++) expect(inOrder.render(n)).toEqual(new RequestRenderer(branch, options).render(n));
      }),
      { numRuns: 60 },
    );
  });

  it("the timeline built in pieces while the branch grows is the timeline built whole", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 10, maxLength: 60 }), fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 12, maxLength: 12 }), async (steps, cuts) => {
        const b = await play(steps);
        const data = parseSessionText(b.toJsonl());
        const branch: readonly AnyEntry[] = getBranch(data).entries;
        const timelineOptions = { ...options, branchPoints: branchPointsOf(data.entries) };
        const whole = new TimelineBuilder(branch, timelineOptions);
        whole.step();
        let end = Math.min(branch.length, cuts[0]!);
        const grown = new TimelineBuilder(branch.slice(0, end), timelineOptions);
        for (const cut of cuts.slice(1)) {
          grown.step(0);
          end = Math.min(branch.length, end + cut);
          expect(grown.extend(branch.slice(0, end), timelineOptions.branchPoints)).toBe(true);
        }
        expect(grown.extend(branch, timelineOptions.branchPoints)).toBe(true);
        grown.step();
        expect(grown.timeline()).toEqual(whole.timeline());
      }),
      { numRuns: 40 },
    );
  });
});
