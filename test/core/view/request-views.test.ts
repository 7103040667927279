// The model view of a request already sent: request N of a branch is rendered from the entries
// before its answer, with the settings the session recorded then, and never changes when today's
// settings do; the leaf's view is the next request, with today's settings.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { big, compressedSession, persist, resultTexts } from "../../helpers/prune-session.ts";
import { echoSummarizer, lastBatch } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, mergeConfigLayers, type PruneConfig } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import { emptyIndex, rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { renderWhole } from "../../../core/src/render/render.ts";
import { compactionResend, newestCompactionAt } from "../../../core/src/render/compaction-protect.ts";
import { PRUNE_SETTINGS, type AnyEntry } from "../../../core/src/shapes/entries.ts";
import { buildModelView } from "../../../core/src/view/model-view.ts";
import { buildRequestView, modelRequests, renderRequest, requestTitle, RequestRenderer, settingsSourceText } from "../../../core/src/view/request-views.ts";
import { recordedConfig } from "../../../core/src/view/recorded-settings.ts";

const withSettings = (layer: Parameters<typeof mergeConfigLayers>[1]): PruneConfig => mergeConfigLayers(DEFAULT_CONFIG, layer);
const record = (b: SessionBuilder, config: PruneConfig) => b.custom(PRUNE_SETTINGS, { version: "0.1.0", config: recordedConfig(config) });
const STUB = /pruned: see ref `t\d+`/;

/** A read of src/x.ts in the first prompt, summarized on its final reply; then `prompts` more, one answer each. */
async function readThenPrompts(b: SessionBuilder, config: PruneConfig, prompts: string[]): Promise<void> {
  b.user("look at x");
  b.assistant({ toolCalls: [{ name: "read", args: { path: "src/x.ts" } }] });
  b.toolResult(b.lastToolCallIds[0]!, "read", big("X"));
  const batch = lastBatch(b, config);
  b.assistant("x is fine");
  const index = emptyIndex();
  persist(b, (await flushBatches([batch], index, config, echoSummarizer)).entries);
  for (const prompt of prompts) b.user(prompt).assistant(`answer to ${prompt}`);
}

/** What the request at `position` on `branch` is by definition: every step of the render over the entries before it, nothing remembered. */
function renderedFromScratch(branch: readonly AnyEntry[], position: number, config: PruneConfig) {
  const prefix = branch.slice(0, position) as AnyEntry[];
  const resend = compactionResend(prefix, newestCompactionAt(prefix), config);
  return renderWhole(buildPiContext(prefix).map((c) => c.message), rebuildIndex(prefix).index, config, readControls(prefix), undefined, resend).messages;
}

describe("modelRequests", () => {
  it("one request per assistant message on the branch, numbered from 1, with the prompt it worked on; an answer that failed counts", () => {
    const b = new SessionBuilder().user("first prompt").toolUse("read", { path: "a.ts" }, "A").assistant("done").user("second prompt");
    b.assistant({ text: "", stopReason: "error" });
    const requests = modelRequests(b.entries);
    expect(requests.map((r) => [r.n, r.prompt, r.toolCalls, r.stopReason])).toEqual([
      [1, "first prompt", 1, "toolUse"],
      [2, "first prompt", 0, "stop"],
      [3, "second prompt", 0, "error"],
    ]);
    expect(requests.map((r) => b.entries[r.position]!.id)).toEqual(requests.map((r) => r.entryId));
  });
});

describe("renderRequest", () => {
  it("what request N sent is Pi's context before its answer: the answer and everything after are not in it", () => {
    const b = new SessionBuilder().user("hi").assistant("hello").user("and now?").assistant("now this");
    const second = renderRequest(b.entries, 2, { config: DEFAULT_CONFIG });
    expect(second.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(requestTitle(second)).toBe("request 2 of 2 (the last request sent)");
    expect(requestTitle(renderRequest(b.entries, 1, { config: DEFAULT_CONFIG }))).toBe("request 1 of 2");
    expect(() => renderRequest(b.entries, 3, { config: DEFAULT_CONFIG })).toThrow(RangeError);
    expect(() => renderRequest(b.entries, 0, { config: DEFAULT_CONFIG })).toThrow(RangeError);
  });

  it("settings changed mid-session: each request is rendered with the settings recorded before it, today's settings are not used", async () => {
    const before = withSettings({ cacheAware: false });
    const after = withSettings({ cacheAware: false, protectedPaths: ["**/skills/**/*.md", "src/**"] });
    const b = new SessionBuilder();
    record(b, before);
    await readThenPrompts(b, before, ["two"]);
    const changed = record(b, after).lastId;
    b.user("three").assistant("answer to three");
    const today = withSettings({ enabled: false });
    const views = [1, 2, 3, 4].map((n) => renderRequest(b.entries, n, { config: today }));
    const xResult = (n: number) => resultTexts(views[n - 1]!.messages)[0]!;
    expect(xResult(2)).toContain(big("X")); // not summarized yet when the answer was asked for
    expect(xResult(3)).toMatch(STUB);
    expect(xResult(4)).toContain(big("X")); // protected by the settings recorded before it
    expect(views.map((v) => v.settings.source)).toEqual(["recorded", "recorded", "recorded", "recorded"]);
    expect(views[3]!.settings.entryId).toBe(changed);
    expect(views[2]!.settings.entryId).not.toBe(changed);
    expect(views[3]!.settings.writer).toBe("pi-pruner 0.1.0");
    expect(settingsSourceText(views[3]!.settings)).toBe("rendered with the settings the session recorded before this request (by pi-pruner 0.1.0)");
  });

  it("a compaction between requests: the request before it sent the whole history, the one after Pi's summary and what it kept", async () => {
    const b = new SessionBuilder();
    record(b, DEFAULT_CONFIG);
    await readThenPrompts(b, DEFAULT_CONFIG, ["two"]);
    const kept = b.entries.findLast((e) => e.type === "message" && (e as { message: { role: string } }).message.role === "user")!.id;
    b.compaction({ firstKeptEntryId: kept, summary: "They looked at x." });
    b.user("three").assistant("answer to three");
    const beforeCompaction = renderRequest(b.entries, 3, { config: DEFAULT_CONFIG });
    const afterCompaction = renderRequest(b.entries, 4, { config: DEFAULT_CONFIG });
    expect(beforeCompaction.messages[0]).toMatchObject({ role: "user", content: "look at x" });
    expect(resultTexts(beforeCompaction.messages)).toHaveLength(1);
    expect(afterCompaction.messages.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant", "user"]);
    expect(afterCompaction.messages[0]).toMatchObject({ summary: "They looked at x." });
    expect(afterCompaction.rawChars).toBeLessThan(beforeCompaction.rawChars);
  });

  it("a protection added after the fact leaves the requests already sent as they were and changes the next one", async () => {
    const b = new SessionBuilder();
    record(b, DEFAULT_CONFIG);
    await readThenPrompts(b, DEFAULT_CONFIG, ["two", "three"]);
    const data = parseSessionText(b.toJsonl());
    const protectedNow = withSettings({ protectedPaths: ["**/skills/**/*.md", "src/x.ts"] });
    const past = (config: PruneConfig) => [3, 4].map((n) => buildRequestView(data, { request: n, config })!);
    for (const view of past(protectedNow)) expect(resultTexts(view.messages)[0]).toMatch(STUB);
    expect(past(protectedNow).map((v) => v.messages)).toEqual(past(DEFAULT_CONFIG).map((v) => v.messages));
    // The next request is sent with today's settings: the read is protected now.
    expect(resultTexts(buildModelView(data, { config: protectedNow }).messages)[0]).toContain(big("X"));
    expect(resultTexts(buildModelView(data, { config: DEFAULT_CONFIG }).messages)[0]).toMatch(STUB);
  });

  it("a session that recorded no settings is rendered with the writer's defaults when the caller knows them, else with today's, and says which", async () => {
    const b = new SessionBuilder();
    await readThenPrompts(b, DEFAULT_CONFIG, ["two"]);
    const protectedNow = withSettings({ protectedPaths: ["src/x.ts"] });
    const today = renderRequest(b.entries, 3, { config: protectedNow });
    expect(today.settings.source).toBe("current");
    expect(resultTexts(today.messages)[0]).toContain(big("X"));
    expect(settingsSourceText(today.settings)).toBe("rendered with today's settings: the session recorded no settings before this request, so what was sent may have differed");
    const defaults = renderRequest(b.entries, 3, { config: protectedNow, writerDefaults: { writer: "pi-condense 2.9.1", config: DEFAULT_CONFIG } });
    expect(defaults.settings).toMatchObject({ source: "writer-defaults", writer: "pi-condense 2.9.1" });
    expect(resultTexts(defaults.messages)[0]).toMatch(STUB);
  });

  it("a shrink retired as stale while a request was sent still applied to that request, and no longer to the next", () => {
    const b = new SessionBuilder().user("go");
    b.toolUse("read", { path: "a.ts" }, "A".repeat(300), { id: "c1" });
    const target = b.lastId;
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "c1" }, replacement: "a.ts: all A", pinnedEntryId: target, seq: 1, ts: 1 });
    b.assistant({ toolCalls: [{ name: "bash", args: { command: "ls" }, id: "c2" }] }).toolResult("c2", "bash", "a.ts");
    // Written by the live pruner while request 3 was being sent, after its render.
    b.custom("mulligan:cancel", { schema: "pi-mulligan", v: 1, kind: "cancel", targetId: "s1", reason: "stale", seq: 2, ts: 2 });
    b.assistant("done").user("again").assistant("again done");
    const renderer = new RequestRenderer(b.entries, { config: DEFAULT_CONFIG });
    const third = renderer.render(3);
    const fourth = renderer.render(4);
    expect(resultTexts(third.messages)[0]).toBe("<context-shrunk>\na.ts: all A\n</context-shrunk>");
    expect(third.controls.shrinks.map((s) => s.state)).toEqual(["active"]);
    expect(resultTexts(fourth.messages)[0]).toBe("A".repeat(300));
    expect(fourth.controls.shrinks.map((s) => s.state)).toEqual(["stale"]);
  });
});

describe("RequestRenderer", () => {
  it("in order, in reverse, or one at a time, each request's view is the whole render of the entries before it", async () => {
    const config = withSettings({ cacheAware: false });
    const b = await compressedSession(config);
    record(b, config);
    // After the compressed chains: a rewind the agent wrote, a compaction, and more work.
    b.user("five").toolUse("bash", { command: "grep -r x" }, "hit\n".repeat(400), { id: "g1" });
    const grep = b.entries.slice(-2).map((e) => e.id);
    b.custom("mulligan:rewind", { schema: "pi-mulligan", v: 1, kind: "rewind", id: "r1", granularity: "last_tool_call_group", hideEntryIds: grep, seq: 1, ts: 1 });
    b.assistant("five done");
    const five = b.entries.find((e) => e.type === "message" && (e as { message: { content?: unknown } }).message.content === "five")!.id;
    b.compaction({ firstKeptEntryId: five, summary: "Four chains of reading." });
    b.user("six").toolUse("read", { path: "src/6.ts" }, big("six")).assistant("six done");
    // A context edit of a prompt, and one (in a hand-edited file) that names an entry after it.
    b.contextEdit(b.entries.findLast((e) => e.type === "message" && (e as { message: { content?: unknown } }).message.content === "six")!.id, "six, edited");
    b.raw({ type: "context_edit", targetId: "later-prompt", replacement: { content: "seven, edited" } });
    b.user("seven").assistant("seven done");
    b.raw({ type: "message", id: "later-prompt", message: { role: "user", content: "eight", timestamp: Date.UTC(2026, 0, 1) } }).assistant("eight done");
    const branch = b.entries;
    const requests = modelRequests(branch);
    expect(requests.length).toBeGreaterThan(10);
    const expected = requests.map((r) => renderedFromScratch(branch, r.position, config));
    const inOrder = new RequestRenderer(branch, { config: DEFAULT_CONFIG });
    expect(requests.map((r) => inOrder.render(r.n).messages)).toEqual(expected);
    const reversed = new RequestRenderer(branch, { config: DEFAULT_CONFIG });
    expect([...requests].reverse().map((r) => reversed.render(r.n).messages)).toEqual([...expected].reverse());
    for (const r of [requests[3]!, requests.at(-1)!]) expect(renderRequest(branch, r.n, { config: DEFAULT_CONFIG }).messages).toEqual(expected[r.n - 1]);
    // The session's own history: chain blocks before the compaction, the rewound grep gone from the request after it.
    expect(expected.some((messages) => messages.some((m) => m.role === "custom" && m.customType === "context-prune-chain"))).toBe(true);
    const afterRewind = requests.find((r) => r.prompt === "five" && r.toolCalls === 0)!;
    expect(JSON.stringify(expected[afterRewind.n - 1])).not.toContain("hit\\nhit");
    expect(JSON.stringify(expected.at(-1))).toContain("seven, edited");
  });

  it("the view of the last request sent is the next request's view without the leaf's own answer", async () => {
    const b = new SessionBuilder();
    record(b, DEFAULT_CONFIG);
    await readThenPrompts(b, DEFAULT_CONFIG, ["two"]);
    const data = parseSessionText(b.toJsonl());
    const last = buildRequestView(data, { request: "last", config: DEFAULT_CONFIG })!;
    const next = buildModelView(data, { config: DEFAULT_CONFIG });
    expect(last.request.n).toBe(3);
    expect(next.messages.slice(0, -1)).toEqual(last.messages);
    expect(next.messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "answer to two" }] });
    expect(buildRequestView(parseSessionText(new SessionBuilder().user("nothing answered yet").toJsonl()), { request: "last", config: DEFAULT_CONFIG })).toBeUndefined();
  });
});

describe("a 1,000-request session", () => {
  // Its speed is a figure for a benchmark, not a timed test: this checks that the long pass holds together.
  it("every request renders in order, each the one asked for, the last one with the whole session before it", () => {
    const b = new SessionBuilder();
    record(b, DEFAULT_CONFIG);
    for (let i = 0; i < 500; i++) b.user(`prompt ${i}`).toolUse("read", { path: `src/${i}.ts` }, `file ${i}\n`.repeat(40)).assistant(`done ${i}`);
    const renderer = new RequestRenderer(b.entries, { config: DEFAULT_CONFIG });
    expect(renderer.count).toBe(1000);
    let last: ReturnType<RequestRenderer["render"]> | undefined;
    for (let n = 1; n <= renderer.count; n++) {
      last = renderer.render(n);
      expect(last.request.n).toBe(n);
    }
    // The last request carries every turn before its own answer: 500 prompts and 500 reads, and 499 final replies.
    expect(last!.messages.filter((m) => m.role === "user")).toHaveLength(500);
    expect(last!.messages.filter((m) => m.role === "toolResult")).toHaveLength(500);
  });
});
