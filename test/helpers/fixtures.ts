// Small sessions shared by several tests, built by helpers rather than copied blobs.
import { SessionBuilder } from "./session-builder.ts";

/** A session as the pruner writes it: one summarized batch, one spill, one alias, one protected read. */
export function prunedSessionBuilder(): SessionBuilder {
  const b = new SessionBuilder({ sessionId: "s-view", cwd: "/workspace" });
  b.user("fix the build");
  b.assistant({
    toolCalls: [
      { name: "read", args: { path: "skills/gate/SKILL.md" }, id: "c1" },
      { name: "read", args: { path: "src/a.ts" }, id: "c2" },
      { name: "bash", args: { command: "npm run build" }, id: "c3" },
    ],
  });
  b.toolResult("c1", "read", "# Gate\nAlways run the gate.").toolResult("c2", "read", "A".repeat(1200)).toolResult("c3", "bash", "B".repeat(80_000));
  const ts = (id: string) => {
    const e = b.entries.find((x) => x.type === "message" && (x as { message: { toolCallId?: string } }).message.toolCallId === id) as { message: { timestamp: number } };
    return e.message.timestamp;
  };
  b.custom("context-prune-index", {
    toolCalls: [{ toolCallId: "c3", toolName: "bash", args: { command: "npm run build" }, resultText: "", isError: false, turnIndex: 1, resultTimestamp: ts("c3"), spillPath: "/blobs/c3.txt", spillBytes: 80_000, resultPreview: "BBB" }],
    refs: [{ shortId: "t1", toolCallId: "c3", resultTimestamp: ts("c3") }],
  });
  b.assistant("built");
  b.custom("context-prune-index", {
    toolCalls: [{ toolCallId: "c2", toolName: "read", args: { path: "src/a.ts" }, resultText: "A".repeat(1200), isError: false, turnIndex: 1, resultTimestamp: ts("c2") }],
    refs: [{ shortId: "t2", toolCallId: "c2", resultTimestamp: ts("c2") }],
  });
  b.customMessage("context-prune-summary", "- `t2` read src/a.ts: all A's", {
    toolCallRefs: [{ shortId: "t2", toolCallId: "c2", resultTimestamp: ts("c2") }],
    toolNames: ["read"],
    turnIndex: 1,
  });
  b.custom("context-prune-frontier", { lastAttemptedToolCallId: "c2", outcome: "summarized" });
  b.user("read it again");
  b.toolUse("read", { path: "src/a.ts" }, "A".repeat(1200), { id: "c4" });
  const c4 = ts("c4");
  b.custom("context-prune-dedup-alias", { newToolCallId: "c4", originalToolCallId: "c2", newResultTimestamp: c4, originalResultTimestamp: ts("c2") });
  // The agent's markers, in pi-mulligan's shapes, changing nothing the model is sent: the shrink
  // names the protected skill read (never shrunk), the rewind of the re-read was cancelled.
  const resultEntry = (id: string) => b.entries.find((x) => x.type === "message" && (x as { message: { toolCallId?: string } }).message.toolCallId === id)!.id;
  const c4Result = resultEntry("c4");
  const c4Call = b.entries[b.entries.findIndex((x) => x.id === c4Result) - 1]!.id;
  const c1Result = resultEntry("c1");
  b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "m1", target: { by_tool_call_id: "c1" }, replacement: "the gate skill: run the gate", pinnedEntryId: c1Result, seq: 1, ts: c4 + 10 });
  b.custom("mulligan:rewind", {
    schema: "pi-mulligan",
    v: 1,
    kind: "rewind",
    id: "m2",
    granularity: "last_tool_call_group",
    hideEntryIds: [c4Call, c4Result],
    note: { what_happened: "read src/a.ts a second time", true_current_state: "src/a.ts is all A's", next: "fix the build" },
    seq: 2,
    ts: c4 + 20,
  });
  b.custom("mulligan:cancel", { schema: "pi-mulligan", v: 1, kind: "cancel", targetId: "m2", reason: "person", seq: 3, ts: c4 + 30 });
  b.label(b.lastId, "mulligan:checkpoint:before-refactor");
  b.assistant("same as before");
  return b;
}
