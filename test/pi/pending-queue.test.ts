// The queue of batches waiting for the summarizer: what capture adds, what a crash left and is
// spilled on the next start, and what the agent's own rewinds and shrinks take out of it.
import { describe, expect, it } from "vitest";
import { PendingQueue } from "../../pi-extension/src/pending-queue.ts";
import { OnceReporter } from "../../pi-extension/src/once-reporter.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { emptyIndex } from "../../core/src/prune/prune-index.ts";
import { unflushedBatches } from "../../core/src/prune/pending-batches.ts";
import { memorySpillStorage } from "../../core/src/session/blobs.ts";
import { readControls } from "../../core/src/control/read-controls.ts";
import { PRUNE_INDEX, type SpillStorage } from "../../core/src/shapes/entries.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";
import { lastTurn } from "../helpers/prune-session.ts";

const config = { ...DEFAULT_CONFIG, spillThreshold: 5_000 };

const full: SpillStorage = {
  write: () => {
    throw new Error("disk full");
  },
  read: async () => ({ ok: false, reason: "nothing was written" }),
};

function queue() {
  const seen: string[] = [];
  return { queue: new PendingQueue(new OnceReporter((m) => seen.push(m))), seen };
}

/** A turn reading a small file and a large log. */
function readTurn() {
  const b = new SessionBuilder().user("look");
  b.assistant({ toolCalls: [{ id: "c1", name: "read", args: { path: "a.ts" } }, { id: "c2", name: "bash", args: { command: "cat build.log" } }] });
  b.toolResult("c1", "read", "A".repeat(2_000)).toolResult("c2", "bash", "z".repeat(6_000));
  return b;
}

describe("the pending queue", () => {
  it("a captured turn's large result is spilled at once and the rest joins the queue", () => {
    const { queue: q } = queue();
    const spill = memorySpillStorage();
    const { assistant, results } = lastTurn(readTurn());
    const entries = q.capture(assistant, results, 1, emptyIndex(), config, spill);
    expect(entries.map((e) => e.customType)).toEqual([PRUNE_INDEX]);
    expect([...spill.files.values()]).toEqual(["z".repeat(6_000)]);
    expect(q.batches.map((b) => b.calls.map((c) => c.toolCallId))).toEqual([["c1"]]);
    expect(q.callCount).toBe(1);
  });

  it("a spill file that cannot be written is told once, whether at capture or on the next start, and the output stays queued", () => {
    const { queue: q, seen } = queue();
    const b = readTurn();
    const { assistant, results } = lastTurn(b);
    expect(q.capture(assistant, results, 1, emptyIndex(), config, full)).toEqual([]);
    expect(q.callCount).toBe(2);
    q.batches = unflushedBatches(b.entries, emptyIndex(), config);
    expect(q.spillOversized(emptyIndex(), config, full)).toEqual([]);
    expect(q.callCount).toBe(2);
    expect(seen).toEqual(["pi-pruner: could not write a spill file (disk full); the output stays inline"]);
  });

  it("on the next start only batches with a result large enough are spilled; the others stay as they were", () => {
    const { queue: q } = queue();
    const b = readTurn();
    b.assistant({ toolCalls: [{ id: "c3", name: "read", args: { path: "b.ts" } }] }).toolResult("c3", "read", "B".repeat(2_000));
    q.batches = unflushedBatches(b.entries, emptyIndex(), config);
    const untouched = q.batches[1];
    const entries = q.spillOversized(emptyIndex(), config, memorySpillStorage());
    expect(entries.map((e) => e.customType)).toEqual([PRUNE_INDEX]);
    expect(q.batches.map((batch) => batch.calls.map((c) => c.toolCallId))).toEqual([["c1"], ["c3"]]);
    expect(q.batches[1]).toBe(untouched);
  });

  it("a call the agent shrank leaves the queue; a batch left empty goes with it", () => {
    const { queue: q } = queue();
    const b = new SessionBuilder().user("go");
    b.toolUse("read", { path: "a.ts" }, "A".repeat(2_000), { id: "c1" });
    const target = b.lastId;
    b.toolUse("read", { path: "b.ts" }, "B".repeat(2_000), { id: "c2" });
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "c1" }, replacement: "a.ts: all A", pinnedEntryId: target, seq: 1, ts: 1 });
    q.batches = unflushedBatches(b.entries, emptyIndex(), config);
    q.dropControlled(readControls(b.entries));
    expect(q.batches.map((batch) => batch.calls.map((c) => c.toolCallId))).toEqual([["c2"]]);
  });

  it("without markers the queue is left as it was", () => {
    const { queue: q } = queue();
    q.batches = unflushedBatches(readTurn().entries, emptyIndex(), config);
    const before = q.batches;
    q.dropControlled(readControls([]));
    expect(q.batches).toBe(before);
  });
});
