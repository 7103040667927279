// The recorded real-Pi sessions the cost replay runs on (bench/record-session.ts). The long one
// must hold what its figures are said to measure: many requests over many tasks, thinking on every
// turn, failing tests and the edits that fix them, a failed edit, re-reads, the skill read twice,
// long logs. Neither may carry a path of the machine it was recorded on, and both must still be
// what the recorder's script produces.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { describe, expect, it } from "vitest";
import { getBranch, parseSessionText } from "../../core/src/session/session-reader.ts";
import { buildPiContext } from "../../core/src/session/pi-context.ts";
import { contentText, type AgentMessage, type AssistantMessage, type ToolCallBlock, type ToolResultMessage } from "../../core/src/shapes/messages.ts";
import { LONG_RECORDING, SHORT_RECORDING, type RecordedMeta, type Recording } from "../../bench/record-session.ts";
import { SKILL_PATH } from "../../bench/lib/gen.ts";
import { REPO_ROOT } from "../helpers/pi-process.ts";
import { FIXTURE_PLACEHOLDERS } from "../helpers/real-session.ts";

interface Result {
  call: ToolCallBlock;
  result: ToolResultMessage;
  text: string;
}

function load(recording: Recording) {
  const text = readFileSync(recording.session, "utf8");
  const meta = JSON.parse(readFileSync(recording.meta, "utf8")) as RecordedMeta;
  const data = parseSessionText(text);
  const branch = getBranch(data);
  // What Pi sends from this branch, as the replay reads it.
  const messages: AgentMessage[] = buildPiContext(branch.entries).map((c) => c.message);
  const assistants = messages.filter((m): m is AssistantMessage => m.role === "assistant");
  const calls = new Map(assistants.flatMap((m) => m.content.filter((b): b is ToolCallBlock => b.type === "toolCall").map((b) => [b.id, b] as const)));
  const results: Result[] = messages
    .filter((m): m is ToolResultMessage => m.role === "toolResult")
    .map((r) => ({ call: calls.get(r.toolCallId)!, result: r, text: contentText(r.content) }));
  return { text, meta, data, branch, assistants, users: messages.filter((m) => m.role === "user"), results };
}

const short = load(SHORT_RECORDING);
const long = load(LONG_RECORDING);

const isTestRun = (r: Result) => r.call.name === "bash" && /scripts\/test\.mjs/.test(String(r.call.arguments.command));
const reads = (s: typeof long, path: string) => s.results.filter((r) => r.call.name === "read" && r.call.arguments.path === path).length;

describe.each([
  ["short", short, SHORT_RECORDING],
  ["long", long, LONG_RECORDING],
] as const)("the %s recorded session", (_name, s, recording) => {
  it("is read by core's reader without a bad line, as one branch with every tool call answered", () => {
    expect(s.data.errors).toEqual([]);
    expect(s.data.header?.type).toBe("session");
    expect(s.branch.problems).toEqual([]);
    expect(s.branch.entries.length).toBe(s.data.entries.length);
    expect(s.results.every((r) => r.call !== undefined)).toBe(true);
    expect(s.results.length).toBe(s.assistants.reduce((n, m) => n + m.content.filter((b) => b.type === "toolCall").length, 0));
  });

  it("has as many assistant messages and user prompts as its meta says, recorded with Pi 1.6", () => {
    expect(s.assistants.length).toBe(s.meta.requests);
    expect(s.users.length).toBe(recording.prompts.length);
    expect(s.meta.piVersion).toMatch(/^1\.6\./);
    expect(s.meta.headChars).toBe(s.meta.systemChars + s.meta.toolsChars);
  });

  it("is what the recorder's script produces: the same thinking and tool calls, turn by turn", () => {
    const recorded = s.assistants.map((m) => ({
      thinking: m.content.flatMap((b) => (b.type === "thinking" ? [b.thinking] : [])).join(""),
      calls: m.content.flatMap((b) => (b.type === "toolCall" ? [{ name: b.name, arguments: b.arguments }] : [])),
    }));
    const scripted = recording.script.flat().map((r) => ({
      thinking: "thinking" in r ? (r.thinking ?? "") : "",
      calls: ("toolCalls" in r ? (r.toolCalls ?? []) : []).map((c) => ({ name: c.name, arguments: c.arguments })),
    }));
    expect(recorded).toEqual(scripted);
  });

  it("holds no absolute path of the machine it was recorded on", () => {
    let neutral = s.text;
    for (const placeholder of [...Object.values(FIXTURE_PLACEHOLDERS), "/repo"]) neutral = neutral.split(placeholder).join("");
    expect(neutral.match(/\/(work|tmp|root|home)\/[^"\s]*/g) ?? []).toEqual([]);
    expect(s.text).not.toContain(REPO_ROOT);
    expect(s.text).not.toContain(homedir() + "/");
  });
});

describe("the long recorded session", () => {
  it("has at least 150 model requests over at least 8 tasks", () => {
    expect(long.assistants.length).toBeGreaterThanOrEqual(150);
    expect(long.users.length).toBeGreaterThanOrEqual(8);
    expect(long.meta.tasks).toBe(long.users.length);
  });

  it("thinks on every assistant turn", () => {
    const without = long.assistants.filter((m) => !m.content.some((b) => b.type === "thinking" && b.thinking.length > 0));
    expect(without.length).toBe(0);
  });

  it("has failing test runs, each followed by an edit and then the same run passing", () => {
    const failing = long.results.filter((r) => isTestRun(r) && r.result.isError);
    expect(failing.length).toBeGreaterThanOrEqual(3);
    for (const fail of failing) {
      expect(fail.text).toMatch(/^ FAIL {2}test\/\S+\.test\.ts > /m);
      const after = long.results.slice(long.results.indexOf(fail) + 1);
      const fixed = after.findIndex((r) => r.call.name === "edit" && !r.result.isError);
      expect(fixed, `no edit after ${String(fail.call.arguments.command)}`).toBeGreaterThanOrEqual(0);
      const passing = after.slice(fixed).find((r) => r.call.arguments.command === fail.call.arguments.command && !r.result.isError);
      expect(passing, `${String(fail.call.arguments.command)} does not pass after the edit`).toBeDefined();
    }
  });

  it("has a failed edit that a later edit of the same file gets right", () => {
    const failed = long.results.filter((r) => r.call.name === "edit" && r.result.isError);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const f of failed) {
      expect(f.text).toMatch(/^Could not find/);
      const later = long.results.slice(long.results.indexOf(f) + 1);
      expect(later.some((r) => r.call.name === "edit" && r.call.arguments.path === f.call.arguments.path && !r.result.isError)).toBe(true);
    }
  });

  it("reads the skill file twice and re-reads other files it read before", () => {
    expect(reads(long, SKILL_PATH)).toBeGreaterThanOrEqual(2);
    const paths = new Set(long.results.filter((r) => r.call.name === "read").map((r) => String(r.call.arguments.path)));
    const reread = [...paths].filter((p) => p !== SKILL_PATH && reads(long, p) >= 2);
    expect(reread.length).toBeGreaterThanOrEqual(5);
  });

  it("has greps and a few large reads", () => {
    expect(long.results.filter((r) => r.call.name === "bash" && /\bgrep\b/.test(String(r.call.arguments.command))).length).toBeGreaterThanOrEqual(10);
    expect(long.results.filter((r) => r.call.name === "read" && r.text.length >= 15_000).length).toBeGreaterThanOrEqual(3);
  });

  it("has build logs of 10 KB or more whose errors are at their end", () => {
    const logs = long.results.filter((r) => r.call.name === "bash" && r.result.isError && r.text.length >= 10_000);
    const endingInErrors = logs.filter((r) => {
      const last = r.text.lastIndexOf(": error TS");
      return last > r.text.length * 0.9;
    });
    expect(endingInErrors.length).toBeGreaterThanOrEqual(2);
  });

  it("has a build log of 30 KB or more with an error line in its middle and the failing test names at its end", () => {
    const log = long.results.find((r) => r.call.name === "bash" && r.result.isError && r.text.length >= 30_000);
    expect(log).toBeDefined();
    const error = log!.text.indexOf("✘ [ERROR]");
    expect(error / log!.text.length).toBeGreaterThan(0.25);
    expect(error / log!.text.length).toBeLessThan(0.75);
    const tail = log!.text.slice(-3000);
    expect(tail.match(/^ FAIL {2}test\/\S+ > .+$/gm)?.length).toBeGreaterThanOrEqual(2);
    // Pi kept the whole log: a cut one names the temp file that holds the rest.
    expect(log!.text).not.toContain("Full output");
  });

  it("works in a generated project of about forty files", () => {
    const files = Object.keys(LONG_RECORDING.files);
    expect(files.length).toBeGreaterThanOrEqual(35);
    expect(files.length).toBeLessThanOrEqual(45);
    expect(long.results.filter((r) => r.call.name === "read").map((r) => r.call.arguments.path).filter((p) => files.includes(String(p))).length).toBeGreaterThan(50);
  });

  it("stays a reasonable size for a committed fixture", () => {
    expect(Buffer.byteLength(long.text)).toBeLessThan(3 * 1024 * 1024);
  });
});
