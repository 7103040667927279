// Random sessions for the render's property tests: the steps a session takes between two requests
// (a prompt, a turn of tool calls, a final reply, a flush, a protection changed), the settings it
// runs under, and each step played on a SessionBuilder through the pruner's own capture, flush and
// chain compression.
import fc from "fast-check";
import type { SessionBuilder } from "./session-builder.ts";
import { echoSummarizer, persist } from "./prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../core/src/settings/config.ts";
import { captureBatch, flushBatches, type Batch } from "../../core/src/prune/flush.ts";
import { compressChains } from "../../core/src/prune/chain-plan.ts";
import type { PruneIndex } from "../../core/src/prune/prune-index.ts";
import { QUERY_TOOL } from "../../core/src/shapes/entries.ts";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../core/src/shapes/messages.ts";

const callArb = fc.record({
  tool: fc.constantFrom("read", "bash", "write", QUERY_TOOL),
  path: fc.constantFrom("src/a.ts", "src/b.ts", "skills/x/SKILL.md"),
  big: fc.boolean(),
  bigArgs: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
  isError: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
});

/** The steps every session of these tests can take; a turn of tool calls comes `toolsWeight` times as often as a weight of 1. */
export function sessionSteps(toolsWeight: number) {
  return [
    // A prompt, after a shell command the person ran (`!cmd`, or `!!cmd` kept from the model) in some.
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("user" as const), shell: fc.constantFrom("none", "none", "sent", "small", "excluded") }) },
    { weight: toolsWeight, arbitrary: fc.record({ kind: fc.constant("tools" as const), calls: fc.array(callArb, { minLength: 1, maxLength: 3 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("reply" as const) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("flush" as const), compress: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("protect" as const), what: fc.constantFrom("bash", "paths", "none") }) },
  ] as const;
}

/** The settings a session runs under; thinking is stripped in one session of `stripOneIn`. */
export function configArb(stripOneIn: number) {
  return fc.record({
    cacheAware: fc.boolean(),
    cooldownTurns: fc.integer({ min: 0, max: 3 }),
    recoveryGraceTurns: fc.integer({ min: 0, max: 3 }),
    shellAfterPrompts: fc.integer({ min: 0, max: 3 }),
    thinkingStrip: fc.integer({ min: 0, max: stripOneIn - 1 }).map((n) => n === 0),
  });
}

type Drawn<T> = T extends fc.Arbitrary<infer V> ? V : never;

/** The default settings with what `configArb` drew; a chain is compressed as soon as it closes. */
export function drawnConfig(c: Drawn<ReturnType<typeof configArb>>): PruneConfig {
  return {
    ...DEFAULT_CONFIG,
    cacheAware: c.cacheAware,
    recoveryGraceTurns: c.recoveryGraceTurns,
    purgeErrors: { enabled: true, cooldownTurns: c.cooldownTurns, minArgChars: 100 },
    userShell: { enabled: true, minChars: 500, afterPrompts: c.shellAfterPrompts },
    thinkingStrip: { enabled: c.thinkingStrip, keepLastTurns: 1 },
    chainCompression: { ...DEFAULT_CONFIG.chainCompression, rollingWindow: 1 },
  };
}

type Call = Drawn<typeof callArb>;

/** Appends a prompt, after the shell command the step drew (a large output, a small one, a large `!!` one). */
export function appendPrompt(b: SessionBuilder, shell: "none" | "sent" | "small" | "excluded", n: number): void {
  if (shell !== "none") b.shell(`cat log${n}`, `log ${n}\n${"z".repeat(shell === "small" ? 20 : 900)}`, shell === "excluded" ? { excludeFromContext: true } : {});
  b.user(`prompt ${n}`);
}

/**
 * Appends an answer with `calls` and their outputs (big or small, some errors); returns the batch
 * the live pruner captures of that turn, if any. `context` gives the messages Pi would send.
 */
export function appendToolTurn(b: SessionBuilder, calls: readonly Call[], turn: number, config: PruneConfig, context: (b: SessionBuilder) => AgentMessage[]): Batch | undefined {
  b.assistant({
    thinking: `plan ${turn}`,
    toolCalls: calls.map((call) => ({ name: call.tool, args: call.bigArgs ? { path: call.path, content: "y".repeat(300) } : { path: call.path } })),
  });
  const ids = b.lastToolCallIds;
  calls.forEach((call, i) => b.toolResult(ids[i]!, call.tool, `${call.tool} ${call.path}\n${"x".repeat(call.big ? 1200 : 10)}`, { isError: call.isError }));
  const messages = context(b);
  const results = messages.slice(-calls.length) as ToolResultMessage[];
  return captureBatch(messages[messages.length - calls.length - 1] as AssistantMessage, results, turn, config).batch;
}

/** Flushes the pending batches (if any), then compresses chains if asked, into `index` and the session. */
export async function flushInto(b: SessionBuilder, pending: Batch[], index: PruneIndex, config: PruneConfig, compress: boolean, context: (b: SessionBuilder) => AgentMessage[]): Promise<void> {
  if (pending.length) persist(b, (await flushBatches(pending, index, config, echoSummarizer)).entries);
  if (compress) persist(b, (await compressChains(context(b), index, config, echoSummarizer)).entries);
}

/** The settings with bash, or src/b.ts, protected as well; or as they were. */
export function withProtection(config: PruneConfig, what: "bash" | "paths" | "none"): PruneConfig {
  const protectedTools = what === "bash" ? [...config.protectedTools, "bash"] : config.protectedTools;
  const protectedPaths = what === "paths" ? [...config.protectedPaths, "src/b.ts"] : config.protectedPaths;
  return { ...config, protectedTools, protectedPaths };
}
