// The extension's entry point driven the way Pi drives it, with a stand-in for Pi that records
// every write: each event is one call into the runtime, and the `context` event writes nothing to
// the session, even when it decides that a shrink has gone stale; that cancel is written when the
// request's answer arrives, before Pi persists the answer, where it always landed in the file.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import piPruner from "../../pi-extension/src/index.ts";
import { SessionBuilder } from "../helpers/session-builder.ts";
import type { AgentMessage } from "../../core/src/shapes/messages.ts";

type Handler = (event: Record<string, unknown>, ctx: unknown) => unknown;

/** A stand-in for Pi: the handlers the extension registers, and every entry it appends (which join the branch, as Pi's do). */
function fakePi(b: SessionBuilder) {
  const handlers = new Map<string, Handler[]>();
  const writes: { event: string; customType: string; data: unknown }[] = [];
  let current = "factory";
  const pi = {
    on: (event: string, handler: Handler) => handlers.set(event, [...(handlers.get(event) ?? []), handler]),
    registerTool: () => {},
    registerCommand: () => {},
    setLabel: () => {},
    events: { emit: () => {} },
    appendEntry: (customType: string, data: unknown) => {
      writes.push({ event: current, customType, data });
      b.custom(customType, data);
    },
    sendMessage: (message: { customType: string; details?: unknown }) => writes.push({ event: current, customType: message.customType, data: message.details }),
  };
  const ctx = {
    ui: { notify: () => {}, setStatus: () => {}, setWidget: () => {} },
    model: { api: "anthropic-messages", contextWindow: 200_000 },
    cwd: process.cwd(),
    isProjectTrusted: () => false,
    sessionManager: { getBranch: () => b.entries, getSessionFile: () => undefined, getSessionId: () => "s1", getLeafId: () => b.leafId },
    getContextUsage: () => ({ tokens: 1_000, contextWindow: 200_000 }),
  };
  piPruner(pi as never);
  const fire = async (event: string, payload: Record<string, unknown> = {}) => {
    current = event;
    let result: unknown;
    for (const handler of handlers.get(event) ?? []) result = (await handler({ type: event, ...payload }, ctx)) ?? result;
    current = "idle";
    return result;
  };
  return { handlers, writes, fire };
}

describe("the extension's event path", () => {
  let agentDir: string;
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.PI_CODING_AGENT_DIR;
    agentDir = mkdtempSync(join(tmpdir(), "pi-pruner-events-"));
    process.env.PI_CODING_AGENT_DIR = agentDir;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = saved;
    rmSync(agentDir, { recursive: true, force: true });
  });

  it("registers one handler of its own for each of Pi's events it follows", () => {
    const { handlers } = fakePi(new SessionBuilder());
    for (const event of ["context", "turn_end", "message_end"]) expect(handlers.get(event), event).toHaveLength(1);
  });

  it("a stale shrink is decided while a request is rendered and its cancel written when the answer arrives, before Pi persists it", async () => {
    const b = new SessionBuilder().user("read a.ts and shrink it");
    b.toolUse("read", { path: "a.ts" }, "A".repeat(300), { id: "c1" });
    const target = b.lastId;
    b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: "s1", target: { by_tool_call_id: "c1" }, replacement: "a.ts: all A", pinnedEntryId: target, seq: 1, ts: 1 });
    const { writes, fire } = fakePi(b);
    await fire("session_start", { reason: "startup" });
    // What Pi sends after its compaction cut the shrunk result away: the shrink's target is absent.
    const afterCompaction: AgentMessage[] = [{ role: "user", content: "what next?", timestamp: Date.now() }];
    const answer = { role: "assistant", content: [{ type: "text", text: "ok" }], timestamp: Date.now(), stopReason: "stop" };
    // Three requests in a row without the target (shrinkStaleAfterRenders): the third retires it.
    for (let i = 0; i < 3; i++) {
      expect(await fire("context", { messages: structuredClone(afterCompaction) })).toBeUndefined();
      if (i < 2) await fire("message_end", { message: answer });
    }
    expect(writes.filter((w) => w.event === "context")).toEqual([]);
    // A message that is not the answer writes nothing either.
    await fire("message_end", { message: { role: "user", content: "hm", timestamp: Date.now() } });
    expect(writes.filter((w) => w.customType === "mulligan:cancel")).toEqual([]);
    await fire("message_end", { message: answer });
    const cancels = writes.filter((w) => w.customType === "mulligan:cancel");
    expect(cancels).toEqual([{ event: "message_end", customType: "mulligan:cancel", data: expect.objectContaining({ targetId: "s1", reason: "stale", kind: "cancel", seq: 2 }) }]);
    // Written once: the next answers and requests find it on the branch.
    await fire("context", { messages: structuredClone(afterCompaction) });
    await fire("message_end", { message: answer });
    expect(writes.filter((w) => w.customType === "mulligan:cancel")).toHaveLength(1);
    expect(writes.filter((w) => w.event === "context")).toEqual([]);
  });
});
