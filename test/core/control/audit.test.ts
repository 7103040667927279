import { describe, expect, it } from "vitest";
import { auditReport, formatAudit } from "../../../core/src/control/audit.ts";
import { readControls } from "../../../core/src/control/read-controls.ts";
import { buildPiContext } from "../../../core/src/session/pi-context.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { RENDER_STEPS, renderWhole } from "../../../core/src/render/render.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

const envelope = { schema: "pi-mulligan", v: 1 };
const big = (label: string, chars: number) => `${label} `.repeat(Math.ceil(chars / (label.length + 1))).slice(0, chars);

/** A session: a task, three results of different sizes, and markers of every kind. */
function session() {
  const b = new SessionBuilder().user("fix the build");
  b.toolUse("bash", { command: "npm run build" }, big("build-log", 20_000), { id: "c_build" });
  const buildResult = b.lastId;
  b.toolUse("read", { path: "src/server.ts" }, big("server", 8_000), { id: "c_read" });
  const readResult = b.lastId;
  b.toolUse("bash", { command: "ls" }, "a.ts\nb.ts", { id: "c_ls" });
  b.assistant("working on it");
  const checkpointAt = b.lastId;
  b.label(checkpointAt, "mulligan:checkpoint:before-fix");
  b.user("go on");
  b.toolUse("bash", { command: "git diff" }, big("diff", 3_000), { id: "c_diff" });
  const diffCall = b.entries[b.entries.length - 2]!.id;
  const diffResult = b.lastId;
  b.custom("mulligan:shrink", { ...envelope, kind: "shrink", id: "s-build", target: { by_tool_call_id: "c_build" }, replacement: "build failed: missing export in server.ts", pinnedEntryId: buildResult, seq: 1, ts: 1 });
  b.custom("mulligan:shrink", { ...envelope, kind: "shrink", id: "s-read", target: { by_tool_name: "read", occurrence: "last" }, replacement: "server.ts: 300 lines", pinnedEntryId: readResult, seq: 2, ts: 2 });
  b.custom("mulligan:cancel", { ...envelope, kind: "cancel", targetId: "s-read", reason: "agent", seq: 3, ts: 3 });
  b.custom("mulligan:shrink", { ...envelope, kind: "shrink", id: "s-gone", target: { by_content_includes: "never there" }, replacement: "x", pinnedEntryId: "no-such-entry", seq: 4, ts: 4 });
  b.custom("mulligan:cancel", { ...envelope, kind: "cancel", targetId: "s-gone", reason: "stale", seq: 5, ts: 5 });
  b.custom("mulligan:rewind", {
    ...envelope,
    kind: "rewind",
    id: "r-diff",
    granularity: "last_tool_call_group",
    hideEntryIds: [diffCall, diffResult],
    note: { what_happened: "The diff was of the wrong branch.\nLesson: check out first.", true_current_state: "build fails", next: "check out main" },
    seq: 6,
    ts: 6,
  });
  const raw = buildPiContext(b.entries).map((c) => c.message);
  const controls = readControls(b.entries);
  const steps: { step: string; messages: readonly AgentMessage[] }[] = [];
  renderWhole(raw, emptyIndex(), DEFAULT_CONFIG, controls, (step, messages) => steps.push({ step, messages }));
  return { raw, controls, steps };
}

describe("the context audit", () => {
  it("gives the estimate of what Pi would send and after every step of the render, in order", () => {
    const { raw, controls, steps } = session();
    const report = auditReport({ raw, steps, controls, config: DEFAULT_CONFIG });
    expect(report.stages.map((s) => s.step)).toEqual([...RENDER_STEPS]);
    // The shrink of the 20,000-character log and the rewind of the diff are the self-control step's saving.
    const selfControl = report.stages[0]!;
    expect(selfControl.saved).toBeGreaterThan((20_000 + 3_000 - 200) / 4);
    expect(report.rawTokens - selfControl.tokens).toBe(selfControl.saved);
    expect(report.sentTokens).toBe(report.stages.at(-1)!.tokens);
    expect(report.sentMessages).toBe(raw.length - 2);
  });

  it("ranks the largest messages of what the model is sent, with their tool, call id and a preview", () => {
    const { raw, controls, steps } = session();
    const report = auditReport({ raw, steps, controls, config: DEFAULT_CONFIG, top: 2 });
    expect(report.top).toHaveLength(2);
    expect(report.top[0]).toMatchObject({ role: "toolResult", toolName: "read", toolCallId: "c_read", tokens: 2000 });
    expect(report.top[0]!.preview).toMatch(/^src\/server\.ts: server server/);
    expect(report.top[1]!.tokens).toBeLessThanOrEqual(report.top[0]!.tokens);
    // The log is counted as it is sent: the shrink's replacement, not the 20,000 characters.
    const log = auditReport({ raw, steps, controls, config: DEFAULT_CONFIG, top: 100 }).top.find((c) => c.toolCallId === "c_build")!;
    expect(log.tokens).toBeLessThan(30);
    expect(log.preview).toContain("<context-shrunk> build failed: missing export");
  });

  it("flags results over their tool's bloat threshold in what the model is sent", () => {
    const b = new SessionBuilder().user("look");
    b.toolUse("bash", { command: "cat log" }, "y".repeat(17_000), { id: "c_big" });
    b.toolUse("read", { path: "a.ts" }, "z".repeat(17_000), { id: "c_file" });
    const raw = buildPiContext(b.entries).map((c) => c.message);
    const controls = readControls(b.entries);
    const report = auditReport({ raw, steps: [{ step: "self-control", messages: raw }], controls, config: DEFAULT_CONFIG });
    // bash uses the 16 KB global threshold; read its own 24 KB one.
    expect(report.bloated).toEqual([{ toolName: "bash", toolCallId: "c_big", bytes: 17_000, thresholdBytes: 16_384, tokens: 4250 }]);
  });

  it("lists the active markers, counts the retired ones, and the checkpoints", () => {
    const { raw, controls, steps } = session();
    const report = auditReport({ raw, steps, controls, config: DEFAULT_CONFIG });
    expect(report.rewinds).toEqual([{ id: "r-diff", granularity: "last_tool_call_group", hiddenMessages: 2, note: "The diff was of the wrong branch." }]);
    expect(report.shrinks).toEqual([{ id: "s-build", target: "the result of tool call c_build", inContext: true }]);
    expect(report.retired).toEqual({ cancelled: 1, stale: 1 });
    expect(report.checkpoints).toEqual(["before-fix"]);
  });

  it("as text: the stages by name, the markers, and who set each checkpoint for whoever reads it", () => {
    const { raw, controls, steps } = session();
    const report = auditReport({ raw, steps, controls, config: DEFAULT_CONFIG, contextWindow: 32_000 });
    const text = formatAudit(report);
    for (const step of RENDER_STEPS) expect(text).toContain(`after ${step}:`);
    expect(text).toContain("of the 32,000-token window");
    expect(text).toContain("Active markers: 1 rewind, 1 shrink; retired: 1 cancelled, 1 stale");
    expect(text).toContain("rewind r-diff (last_tool_call_group): hides 2 messages — The diff was of the wrong branch.");
    expect(text).toContain("shrink s-build: the result of tool call c_build");
    expect(text).toContain("before-fix (set by the person)");
    expect(formatAudit(report, "person")).toContain("before-fix (set by you)");
  });

  it("writes nothing and changes none of its input", () => {
    const { raw, controls, steps } = session();
    const before = JSON.stringify({ raw, steps, markers: controls.markers.map((m) => ({ ...m, hidden: [...(m.kind === "rewind" ? m.hidden : [])] })) });
    auditReport({ raw, steps, controls, config: DEFAULT_CONFIG });
    expect(JSON.stringify({ raw, steps, markers: controls.markers.map((m) => ({ ...m, hidden: [...(m.kind === "rewind" ? m.hidden : [])] })) })).toBe(before);
  });
});
