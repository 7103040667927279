import { describe, expect, it } from "vitest";
import {
  agentAttributableTokens,
  bloatReminder,
  bloatThreshold,
  contentBytes,
  driftNudge,
  highWater,
  turnGrowthOf,
  type HighWaterState,
} from "../../../core/src/control/nudges.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { TURN_METRIC_ENTRY } from "../../../core/src/control/control-entries.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

const config = DEFAULT_CONFIG.selfControl;
const drift = (threshold: number, window: number) => ({ driftNudge: true, driftThresholdTokens: threshold, driftWindowTurns: window });

describe("the bloat threshold", () => {
  it("a listed tool uses its own threshold, any other tool the global one", () => {
    expect(bloatThreshold("read", config)).toBe(24_576);
    expect(bloatThreshold("bash", config)).toBe(16_384);
    expect(bloatThreshold(undefined, config)).toBe(16_384);
  });

  it("a tool named like one of Object's own members still gets the global threshold", () => {
    expect(bloatThreshold("constructor", config)).toBe(16_384);
    expect(bloatThreshold("toString", { bloatThresholdBytes: 10, bloatThresholdBytesByTool: {} })).toBe(10);
  });

  it("counts UTF-8 bytes of text, not characters", () => {
    expect(contentBytes([{ type: "text", text: "héllo" }])).toBe(6);
    expect(contentBytes([{ type: "text", text: "ab" }, { type: "image", data: "AAAA", mimeType: "image/png" }])).toBe(6);
    expect(contentBytes("€")).toBe(3);
  });
});

describe("the bloat reminder", () => {
  it("is one line that names the result and both ways to shed it", () => {
    const text = bloatReminder("bash", 20_480, "call_7");
    expect(text).not.toContain("\n");
    expect(text).toContain("20,480 bytes");
    expect(text).toContain('"by_tool_call_id":"call_7"');
    expect(text).toContain("context_shrink");
    expect(text).toContain("context_rewind");
  });
});

describe("the drift nudge", () => {
  it("fires when the average over a full window reaches the threshold (>=, not >)", () => {
    expect(driftNudge([4000, 4000, 4000], drift(4000, 3))).toContain("~4,000 tokens");
    expect(driftNudge([3999, 4000, 4000], drift(4000, 3))).toBeUndefined();
  });

  it("one heavy turn among small ones does not fire; sustained growth does", () => {
    expect(driftNudge([100, 9000, 100], drift(4000, 3))).toBeUndefined();
    expect(driftNudge([100, 4500, 4200, 4100], drift(4000, 3))).toBeDefined();
  });

  it("stays quiet without a baseline: a window that is not full, or one with an unmeasured turn", () => {
    expect(driftNudge([], drift(10, 3))).toBeUndefined();
    expect(driftNudge([9000, 9000], drift(10, 3))).toBeUndefined();
    expect(driftNudge([null, 9000, 9000], drift(10, 3))).toBeUndefined();
    expect(driftNudge([null, 9000, 9000, 9000], drift(10, 3))).toBeDefined();
  });

  it("stays quiet when switched off", () => {
    expect(driftNudge([9000, 9000, 9000], { ...drift(10, 3), driftNudge: false })).toBeUndefined();
  });

  it("names the tools that shed context, and the audit", () => {
    const text = driftNudge([5000], drift(10, 1))!;
    expect(text).toContain("context_shrink");
    expect(text).toContain("context_rewind");
    expect(text).toContain("context_audit");
  });
});

describe("the high-water note", () => {
  it("fires once on the upward crossing, stays quiet above, and re-arms once below", () => {
    let state: HighWaterState = { above: false };
    const step = (tokens: number) => {
      const r = highWater(state, tokens, 1000, 0.7);
      state = r.state;
      return r.note;
    };
    expect(step(500)).toBeUndefined();
    expect(step(700)).toContain("~70%");
    expect(step(900)).toBeUndefined();
    expect(step(800)).toBeUndefined();
    expect(step(600)).toBeUndefined();
    expect(step(750)).toContain("~75%");
  });

  it("does nothing without a window or with the note switched off", () => {
    expect(highWater({ above: false }, 900, undefined, 0.7)).toEqual({ state: { above: false } });
    expect(highWater({ above: false }, 900, 1000, null)).toEqual({ state: { above: false } });
  });

  it("only informs: it prescribes no tool", () => {
    const note = highWater({ above: false }, 900, 1000, 0.7).note!;
    expect(note).not.toContain("context_shrink");
    expect(note).not.toContain("context_rewind");
  });
});

describe("growth the agent is answerable for", () => {
  it("leaves out the person's prompts and shell commands", () => {
    const user: AgentMessage = { role: "user", content: "x".repeat(4000), timestamp: 1 };
    const result: AgentMessage = { role: "toolResult", toolCallId: "c", toolName: "bash", content: [{ type: "text", text: "y".repeat(400) }], isError: false, timestamp: 2 };
    const shell: AgentMessage = { role: "bashExecution", command: "ls", output: "z".repeat(4000), exitCode: 0, cancelled: false, truncated: false, timestamp: 3 } as AgentMessage;
    expect(agentAttributableTokens([user, result, shell])).toBe(100);
  });

  it("reads the turn metrics of a branch in order, skipping what is not one", () => {
    const b = new SessionBuilder().user("hi");
    b.custom(TURN_METRIC_ENTRY, { schema: "pi-mulligan", v: 1, kind: "turn-metric", seq: 1, ts: 1, deltaTokens: null });
    b.custom(TURN_METRIC_ENTRY, { schema: "other", v: 1, kind: "turn-metric", seq: 2, ts: 2, deltaTokens: 5 });
    b.custom(TURN_METRIC_ENTRY, { schema: "pi-mulligan", v: 1, kind: "turn-metric", seq: 3, ts: 3, deltaTokens: 42 });
    expect(turnGrowthOf(b.entries).map((g) => g.deltaTokens)).toEqual([null, 42]);
  });
});
