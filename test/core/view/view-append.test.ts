// The fast append path: lines Pi appends to a session file are applied to the shown view without
// rebuilding it. After every append the result must be what a full rebuild shows (the tool calls
// with their ids, states and sizes, the protected list, the totals, the leaf, the first prompt),
// except the model's character count, which the fast path estimates and says so. Where it
// declines, it must decline for a reason its contract names, and only then.
import { mkdtempSync, appendFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { readSessionFile, readSessionTail, type SessionData } from "../../../core/src/session/session-reader.ts";
import { buildSessionView, type SessionView } from "../../../core/src/view/session-view.ts";
import { appendToSessionView, type AppendedView } from "../../../core/src/view/view-append.ts";
import { QUERY_TOOL, type AnyEntry } from "../../../core/src/shapes/entries.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"] };
const dir = mkdtempSync(join(tmpdir(), "view-append-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCount = 0;

/** A session file as the editor holds it: parsed with lazy bodies, its view built for the last entry. */
async function openSession(b: SessionBuilder): Promise<{ file: string; data: SessionData; view: SessionView }> {
  const file = join(dir, `s${++fileCount}.jsonl`);
  b.writeTo(file);
  const data = await readSessionFile(file, { lazyBodies: true });
  return { file, data, view: buildSessionView(data, { config }) };
}

/** Appends the entries `b` gained since `from` to the file, reads the tail, and runs the fast path. */
async function appendSince(session: { file: string; data: SessionData; view: SessionView }, b: SessionBuilder, from: number) {
  appendFileSync(session.file, lines(b.entries.slice(from)));
  const tail = await readSessionTail(session.file, session.data);
  expect(tail.reset).toBe(false);
  const applied = appendToSessionView(session.view, session.data, tail.entries, config);
  return { applied, rebuilt: buildSessionView(session.data, { config }), entries: tail.entries };
}

const lines = (entries: readonly AnyEntry[]) => entries.map((e) => JSON.stringify(e) + "\n").join("");

/** What a person sees of a view, field by field, so a failure names what differs. */
function seen(view: SessionView) {
  return {
    leafId: view.leafId,
    firstPrompt: view.session.firstPrompt,
    calls: view.calls.map((c) => ({ id: c.toolCallId, state: c.state, rawChars: c.rawChars, path: c.path, isError: c.isError, resultEntryId: c.resultEntryId, assistantEntryId: c.assistantEntryId })),
    protected: view.protected,
    rawChars: view.totals.rawChars,
  };
}

/**
 * The fast path's view against the rebuild: what a person sees is the same; the whole view is the
 * same apart from the model's characters; those are exact unless flagged, and when flagged they are
 * what the contract says: the figure before plus the new messages' characters. The reason given
 * when more is sent than raw is worked out from what is sent, so it is as exact as that figure.
 */
function expectSameAsRebuild(applied: AppendedView | undefined, rebuilt: SessionView, before: SessionView, beforeWasExact = true): asserts applied is AppendedView {
  expect(applied, "the fast path applies").toBeDefined();
  const view = applied!.view;
  expect(seen(view)).toEqual(seen(rebuilt));
  expect({ ...view, totals: { ...view.totals, modelChars: 0, excess: undefined } }).toEqual({ ...rebuilt, totals: { ...rebuilt.totals, modelChars: 0, excess: undefined } });
  const addedRaw = rebuilt.totals.rawChars - before.totals.rawChars;
  expect(view.totals.modelChars).toBe(before.totals.modelChars === undefined ? undefined : before.totals.modelChars + addedRaw);
  expect(applied!.modelCharsEstimated).toBe(addedRaw > 0);
  if (beforeWasExact && !applied!.modelCharsEstimated) {
    expect(view.totals.modelChars).toBe(rebuilt.totals.modelChars);
    expect(view.totals.excess).toBe(rebuilt.totals.excess);
  }
}

describe("appendToSessionView, hand-made appends", () => {
  it("a user turn is added: the leaf moves, the first prompt stays, the raw size grows by the prompt", async () => {
    const b = new SessionBuilder().user("first question").assistant("answer");
    const session = await openSession(b);
    const from = b.entries.length;
    b.user("second question");
    const { applied, rebuilt } = await appendSince(session, b, from);
    expectSameAsRebuild(applied, rebuilt, session.view);
    expect(applied.view.leafId).toBe(b.lastId);
    expect(applied.view.session.firstPrompt).toBe("first question");
    expect(applied.view.totals.rawChars).toBeGreaterThan(session.view.totals.rawChars);
  });

  it("the first user turn after the system prompt becomes the session's first prompt", async () => {
    const b = new SessionBuilder().system("You are a helper.");
    const session = await openSession(b);
    expect(session.view.session.firstPrompt).toBeUndefined();
    const from = b.entries.length;
    b.user("what is in a.ts?");
    const { applied, rebuilt } = await appendSince(session, b, from);
    expectSameAsRebuild(applied, rebuilt, session.view);
    expect(applied.view.session.firstPrompt).toBe("what is in a.ts?");
  });

  it("an assistant turn with calls adds no call until the results arrive; then each result is a raw call with its size", async () => {
    const b = new SessionBuilder().user("look at the code");
    const session = await openSession(b);
    let from = b.entries.length;
    b.assistant({ text: "reading", toolCalls: [{ name: "read", args: { path: "src/a.ts" } }, { name: "bash", args: { command: "ls" } }] });
    const turn = await appendSince(session, b, from);
    expectSameAsRebuild(turn.applied, turn.rebuilt, session.view);
    expect(turn.applied.view.calls).toEqual([]);

    const [readId, bashId] = b.lastToolCallIds;
    const assistantId = b.lastId;
    session.view = turn.applied.view;
    from = b.entries.length;
    b.toolResult(readId!, "read", "x".repeat(1500)).toolResult(bashId!, "bash", "a.ts\nb.ts", { isError: true });
    const results = await appendSince(session, b, from);
    expectSameAsRebuild(results.applied, results.rebuilt, session.view, false);
    expect(results.applied.view.calls.map((c) => [c.toolCallId, c.state, c.rawChars, c.path ?? c.command, c.isError, c.assistantEntryId])).toEqual([
      [readId, "raw", 1500, "src/a.ts", false, assistantId],
      [bashId, "raw", 9, "ls", true, assistantId],
    ]);
  });

  it("a protected read is added as protected, to the calls and to the Protected list", async () => {
    const b = new SessionBuilder().user("deploy it");
    const session = await openSession(b);
    const from = b.entries.length;
    b.toolUse("read", { path: "skills/deploy/SKILL.md" }, "the deploy skill").toolUse("todo", { items: ["a"] }, "ok");
    const { applied, rebuilt } = await appendSince(session, b, from);
    expectSameAsRebuild(applied, rebuilt, session.view);
    expect(applied.view.calls.map((c) => c.state)).toEqual(["protected", "protected"]);
    expect(applied.view.protected.map((p) => [p.toolName, p.path, p.reason])).toEqual([
      ["read", "skills/deploy/SKILL.md", "path matches `**/skills/**/*.md`"],
      ["todo", undefined, "tool `todo` is in protectedTools"],
    ]);
  });

  it("a model change adds nothing the model sees: the totals stay exact", async () => {
    const b = new SessionBuilder().user("hi").assistant("hello");
    const session = await openSession(b);
    const from = b.entries.length;
    b.modelChange("mock", "other-model");
    const { applied, rebuilt } = await appendSince(session, b, from);
    expectSameAsRebuild(applied, rebuilt, session.view);
    expect(applied.modelCharsEstimated).toBe(false);
    expect(applied.view.totals.modelChars).toBe(rebuilt.totals.modelChars);
  });

  it("a result with no assistant turn before it is a call without arguments, as the rebuild shows it", async () => {
    const b = new SessionBuilder().user("hi");
    const session = await openSession(b);
    const from = b.entries.length;
    b.toolResult("stray_1", "read", "orphan output");
    const { applied, rebuilt } = await appendSince(session, b, from);
    expectSameAsRebuild(applied, rebuilt, session.view);
    expect(applied.view.calls).toEqual([expect.objectContaining({ toolCallId: "stray_1", args: {}, assistantEntryId: undefined })]);
  });

  it("appends one after another stay equal to the rebuild; the model figure stays flagged as an estimate", async () => {
    const b = new SessionBuilder().user("start");
    const session = await openSession(b);
    let exact = true;
    for (let n = 0; n < 4; n++) {
      const from = b.entries.length;
      b.user(`turn ${n}`).toolUse("read", { path: `src/f${n}.ts` }, `body ${n}\n`.repeat(40)).assistant(`done ${n}`);
      const { applied, rebuilt } = await appendSince(session, b, from);
      expectSameAsRebuild(applied, rebuilt, session.view, exact);
      exact &&= !applied.modelCharsEstimated;
      session.view = applied.view;
    }
    expect(exact).toBe(false);
    expect(session.view.calls.map((c) => c.path)).toEqual(["src/f0.ts", "src/f1.ts", "src/f2.ts", "src/f3.ts"]);
  });
});

describe("appendToSessionView declines where only a rebuild is right", () => {
  async function declines(prepare: (b: SessionBuilder) => void, append: (b: SessionBuilder) => void): Promise<void> {
    const b = new SessionBuilder();
    prepare(b);
    const session = await openSession(b);
    const from = b.entries.length;
    append(b);
    const { applied, entries } = await appendSince(session, b, from);
    expect(entries.length).toBeGreaterThan(0);
    expect(applied).toBeUndefined();
  }

  it("a custom entry (extension state such as the pruner's index)", () =>
    declines(
      (b) => b.user("hi").toolUse("read", { path: "a.ts" }, "a"),
      (b) => b.custom("context-prune-index", { toolCalls: [] }),
    ));

  it("a custom message, which the context builder turns into a user message", () =>
    declines(
      (b) => b.user("hi"),
      (b) => b.customMessage("note", "a note"),
    ));

  it("a compaction", () =>
    declines(
      (b) => b.user("hi").assistant("hello"),
      (b) => b.compactionKeepingNothing(),
    ));

  it("an entry on a new branch", () =>
    declines(
      (b) => b.user("hi").assistant("hello").user("more"),
      (b) => b.branchFrom("e2").user("elsewhere"),
    ));

  it("a result for a tool-call id the view already shows", () =>
    declines(
      (b) => b.user("hi").toolUse("read", { path: "a.ts" }, "first", { id: "same" }),
      (b) => b.toolUse("read", { path: "a.ts" }, "second", { id: "same" }),
    ));

  it("a user turn while the view holds a call of the query tool (its grace window moves)", () =>
    declines(
      (b) => b.user("hi").toolUse(QUERY_TOOL, { ref: "t1" }, "recovered output"),
      (b) => b.user("next"),
    ));

  it("a message role the context builder has rules of its own for (a shell command)", () =>
    declines(
      (b) => b.user("hi"),
      (b) => b.raw({ type: "message", message: { role: "bashExecution", command: "ls", output: "a", exitCode: 0, timestamp: 1 } }),
    ));

  it("a message without content", () =>
    declines(
      (b) => b.user("hi"),
      (b) => b.raw({ type: "message", message: { role: "assistant", content: null, timestamp: 1 } }),
    ));

  it("a result whose id is not a string", () =>
    declines(
      (b) => b.user("hi"),
      (b) => b.raw({ type: "message", message: { role: "toolResult", toolCallId: 7, toolName: "read", content: [{ type: "text", text: "x" }], isError: false, timestamp: 1 } }),
    ));

  it("a result whose assistant turn is further back than the fast path looks", () =>
    declines(
      (b) => {
        b.user("hi").assistant({ toolCalls: [{ name: "read", args: { path: "a.ts" }, id: "far" }] });
        for (let i = 0; i < 300; i++) b.modelChange("mock", `m${i}`);
      },
      (b) => b.toolResult("far", "read", "late"),
    ));

  it("an empty session's first entry", () =>
    declines(
      () => {},
      (b) => b.user("hello"),
    ));
});

// ---------------------------------------------------------------------------------------------
// Random sessions, appended a few lines at a time

const TOOLS = ["read", "bash", "todo", QUERY_TOOL] as const;
const PATHS = ["src/a.ts", "src/b.ts", "skills/deploy/SKILL.md"] as const;

type Step =
  | { kind: "user" }
  | { kind: "assistant"; calls: { tool: (typeof TOOLS)[number]; path: (typeof PATHS)[number]; big: boolean }[]; thinking: boolean; reuseId: boolean }
  | { kind: "results"; count: number; error: boolean }
  | { kind: "model" }
  | { kind: "custom" }
  | { kind: "branch"; back: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "user" as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("assistant" as const),
      calls: fc.array(fc.record({ tool: fc.constantFrom(...TOOLS), path: fc.constantFrom(...PATHS), big: fc.boolean() }), { maxLength: 3 }),
      thinking: fc.boolean(),
      reuseId: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("results" as const), count: fc.integer({ min: 1, max: 3 }), error: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "model" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "custom" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("branch" as const), back: fc.integer({ min: 1, max: 6 }) }) },
);

function buildRandom(steps: readonly Step[], withSystem: boolean): SessionBuilder {
  const b = new SessionBuilder();
  if (withSystem) b.system("You are a helper.");
  let pending: { id: string; name: string }[] = [];
  const usedIds: string[] = [];
  steps.forEach((step, n) => {
    if (step.kind === "user") b.user(`question ${n}`);
    else if (step.kind === "assistant") {
      const calls = step.calls.map((c, i) => ({
        name: c.tool,
        args: c.tool === "bash" ? { command: `cat ${c.path}` } : { path: c.path },
        id: i === 0 && step.reuseId && usedIds.length > 0 ? usedIds[0] : undefined,
      }));
      b.assistant({ text: `step ${n}`, thinking: step.thinking ? `thinking ${n}` : undefined, toolCalls: calls });
      pending = b.lastToolCallIds.map((id, i) => ({ id, name: calls[i]!.name }));
      usedIds.push(...b.lastToolCallIds);
    } else if (step.kind === "results") {
      for (const call of pending.splice(0, step.count)) b.toolResult(call.id, call.name, `${call.name} output ${n}\n`.repeat(step.error ? 3 : 30), { isError: step.error });
    } else if (step.kind === "model") b.modelChange("mock", `model-${n}`);
    else if (step.kind === "custom") b.custom("some-extension", { n });
    else if (b.entries.length > step.back) b.branchFrom(b.entries[b.entries.length - 1 - step.back]!.id);
  });
  return b;
}

/**
 * The contract's reasons to decline, restated from view-append's header rather than taken from its
 * code: an entry that is not a plain message (or model/thinking change), a chain that does not
 * continue the shown leaf, a role other than user/assistant/tool result/system, a tool-call id seen
 * before, or a user turn while the view holds a call of the query tool.
 */
function mustDecline(view: SessionView, entries: readonly AnyEntry[]): boolean {
  if (view.leafId === null) return true;
  const ids = new Set(view.calls.map((c) => c.toolCallId));
  const hasQueryCall = view.calls.some((c) => c.toolName === QUERY_TOOL);
  let parent: string = view.leafId;
  for (const entry of entries) {
    if (entry.parentId !== parent) return true;
    parent = entry.id;
    if (entry.type === "model_change" || entry.type === "thinking_level_change") continue;
    if (entry.type !== "message") return true;
    const message = (entry as { message: { role: string; toolCallId?: string } }).message;
    if (message.role === "system" || message.role === "assistant") continue;
    if (message.role === "user") {
      if (hasQueryCall) return true;
      continue;
    }
    if (message.role !== "toolResult") return true;
    if (ids.has(message.toolCallId!)) return true;
    ids.add(message.toolCallId!);
  }
  return false;
}

describe("appendToSessionView, random appends", () => {
  it("after every append the fast path equals the rebuild, or declines exactly where the contract says", async () => {
    let fast = 0;
    let declined = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 1, maxLength: 24 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 100 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 30, maxLength: 30 }),
        async (steps, withSystem, cutPercent, chunkSizes) => {
          const b = buildRandom(steps, withSystem);
          const all = b.toJsonl().split("\n").slice(0, -1).map((line) => line + "\n");
          // The header and at least one entry are in the file when the editor opens it.
          const cut = Math.max(2, Math.round((all.length * cutPercent) / 100));
          const file = join(dir, `r${++fileCount}.jsonl`);
          writeFileSync(file, all.slice(0, cut).join(""));
          const data = await readSessionFile(file, { lazyBodies: true });
          let view = buildSessionView(data, { config });
          let exact = true;
          let at = cut;
          for (let chunk = 0; at < all.length; chunk++) {
            const size = chunkSizes[chunk % chunkSizes.length]!;
            appendFileSync(file, all.slice(at, at + size).join(""));
            at += size;
            const tail = await readSessionTail(file, data);
            expect(tail.reset).toBe(false);
            const rebuilt = buildSessionView(data, { config });
            const applied = appendToSessionView(view, data, tail.entries, config);
            if (mustDecline(view, tail.entries)) {
              expect(applied, `declines ${JSON.stringify(tail.entries.map((e) => e.type))}`).toBeUndefined();
              declined++;
              view = rebuilt;
              exact = true;
            } else {
              expectSameAsRebuild(applied, rebuilt, view, exact);
              fast++;
              exact &&= !applied.modelCharsEstimated;
              view = applied.view;
            }
          }
        },
      ),
      { numRuns: 150 },
    );
    // The generator reaches both outcomes, many times each (about four fast appends to one decline).
    expect(fast).toBeGreaterThan(100);
    expect(declined).toBeGreaterThan(10);
  });
});
