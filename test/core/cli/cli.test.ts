// The command line as a user runs it: the built bin, real files, exit codes and output shapes.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { MULLIGAN_MARKER_UUIDS, MULLIGAN_STORY_TEXT, mulliganSessionOnPi16 } from "../../helpers/mulligan-sessions.ts";

const bin = fileURLToPath(new URL("../../../pi-extension/bin/pi-pruner.js", import.meta.url));

function run(args: string[], opts: { cwd?: string; agentDir?: string } = {}) {
  const agentDir = opts.agentDir ?? mkdtempSync(join(tmpdir(), "pp-agent-"));
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: opts.cwd ?? tmpdir(),
    env: { ...process.env, PI_CODING_AGENT_DIR: agentDir },
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "pp-cli-"));
}

describe("pi-pruner inspect", () => {
  it("--json has the documented shape", () => {
    const dir = tempDir();
    const file = prunedSessionBuilder().writeTo(join(dir, "s.jsonl"));
    const r = run(["inspect", file, "--json"]);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(Object.keys(json).sort()).toEqual(["calls", "chains", "checkpoints", "diagnostics", "errors", "leafId", "markers", "protected", "session", "summaries", "totals", "writer"]);
    expect(json.session).toEqual({ id: "s-view", cwd: "/workspace" });
    expect(Object.keys(json.calls[0]).sort()).toEqual(["diagnostics", "occurrenceKey", "path", "rawChars", "sent", "shortRef", "state", "toolCallId", "toolName", "unrecoverable"]);
    expect(json.calls.map((c: { state: string }) => c.state)).toEqual(["protected", "summarized", "spilled", "deduped"]);
    expect(json.summaries[0]).toEqual({ entryId: expect.any(String), refs: ["t2"], toolCallIds: ["c2"] });
    expect(json.markers[1]).toEqual({
      entryId: expect.any(String),
      kind: "rewind",
      markerId: "m2",
      state: "cancelled",
      cancelReason: "person",
      notApplied: null,
      granularity: "last_tool_call_group",
      hiddenMessages: 0,
      note: { what_happened: "read src/a.ts a second time", true_current_state: "src/a.ts is all A's", next: "fix the build" },
    });
    expect(json.checkpoints).toEqual([{ name: "before-refactor", entryId: expect.any(String), targetEntryId: expect.any(String) }]);
    expect(json.totals.rawChars).toBeGreaterThan(0);
  });

  it("prints a readable report", () => {
    const dir = tempDir();
    const file = prunedSessionBuilder().writeTo(join(dir, "s.jsonl"));
    const r = run(["inspect", file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Tool calls: 4");
    expect(r.stdout).toMatch(/t2\s+read\s+summarized/);
    expect(r.stdout).toContain("skills/gate/SKILL.md");
    expect(r.stdout).toContain("tokens, estimate");
  });

  it("a session with bad lines still prints, lists them and exits 0", () => {
    const dir = tempDir();
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, prunedSessionBuilder().toJsonl() + "garbage line\n{\"torn\":");
    const r = run(["inspect", file, "--json"]);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.errors.length).toBe(2);
    expect(json.calls.length).toBe(4);
  });

  it("an unreadable input exits 2, a usage error exits 1", () => {
    expect(run(["inspect", "/nonexistent/session.jsonl"]).code).toBe(2);
    const usage = run(["inspect"]);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toContain("exactly one session file");
    expect(run(["frobnicate"]).code).toBe(1);
    const dir = tempDir();
    const file = prunedSessionBuilder().writeTo(join(dir, "s.jsonl"));
    expect(run(["inspect", file, "--leaf", "nope"]).code).toBe(1);
  });
});

describe("pi-pruner view", () => {
  it("--json prints the Pi messages after rendering: stubs instead of raw outputs, the skill verbatim", () => {
    const dir = tempDir();
    const file = prunedSessionBuilder().writeTo(join(dir, "s.jsonl"));
    const r = run(["view", file, "--json"]);
    expect(r.code).toBe(0);
    const messages = JSON.parse(r.stdout) as { role: string; content: unknown; toolCallId?: string }[];
    const results = messages.filter((m) => m.role === "toolResult");
    const text = (m: { content: unknown }) => (m.content as { text: string }[])[0]!.text;
    expect(results.map((m) => m.toolCallId)).toEqual(["c1", "c2", "c3", "c4"]);
    expect(text(results[0]!)).toBe("# Gate\nAlways run the gate.");
    expect(text(results[1]!)).toContain("`t2`");
    expect(text(results[2]!)).toContain("spilled to disk (80000 bytes)");
    expect(text(results[3]!)).toBe(text(results[1]!));
    expect(messages.some((m) => m.role === "custom")).toBe(true);
  });

  it("prints readable text with raw and sent sizes", () => {
    const dir = tempDir();
    const file = prunedSessionBuilder().writeTo(join(dir, "s.jsonl"));
    const r = run(["view", file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^# Characters raw [\d,]+ → sent [\d,]+ \(-\d+%\); tokens ≈ [\d,]+ → [\d,]+ \(estimated as characters \/ 4\); the system prompt is not included$/m);
    expect(r.stdout).toContain("tool result · read · c2");
  });
});

describe("pi-pruner view and inspect of a session pi-mulligan wrote on Pi 1.6", () => {
  const session = mulliganSessionOnPi16();
  const rewindId = MULLIGAN_MARKER_UUIDS.rewindWrongRead;
  const file = () => session.builder.writeTo(join(tempDir(), "mulligan.jsonl"));

  it("view marks the rewound span where it was, with its note, and the rewound read's output is absent", () => {
    const r = run(["view", file()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);
    expect(r.stdout).toContain(`# rewind ${rewindId} · active · last_tool_call_group · 2 messages left out`);
    expect(r.stdout).toContain(`# shrink ${MULLIGAN_MARKER_UUIDS.shrinkTestLog} · cancelled · the last bash result`);
    expect(r.stdout).toContain("# checkpoint before-refactor · at entry");
    const sections = r.stdout.split("\n\n");
    const at = sections.findIndex((s) => s.startsWith(`[rewound ${rewindId}: 2 messages — note: what happened: ${MULLIGAN_STORY_TEXT.noteWhatHappened}`));
    expect(at).toBeGreaterThan(0);
    expect(sections[at - 1]).toMatch(/^── \d+\. tool result · mulligan_shrink · /);
    expect(sections[at + 1]).toMatch(/^── \d+\. assistant ──\n→ mulligan_rewind /);
  });

  it("view --json is the sent messages, the rewound read not among them; --json --markers adds the marker lists", () => {
    const path = file();
    const plain = run(["view", path, "--json"]);
    expect(plain.code, plain.stderr).toBe(0);
    const messages = JSON.parse(plain.stdout) as { role: string; toolCallId?: string }[];
    expect(Array.isArray(messages)).toBe(true);
    expect(messages.some((m) => m.toolCallId === session.ids.wrongRead.callId)).toBe(false);
    expect(plain.stdout).not.toContain(MULLIGAN_STORY_TEXT.wrongFile);

    const withMarkers = run(["view", path, "--json", "--markers"]);
    expect(withMarkers.code, withMarkers.stderr).toBe(0);
    const json = JSON.parse(withMarkers.stdout);
    expect(Object.keys(json).sort()).toEqual(["checkpoints", "messages", "rewinds", "rewoundSpans", "shrinks"]);
    expect(json.messages).toEqual(messages);
    expect(json.rewinds).toEqual([
      expect.objectContaining({ markerId: rewindId, state: "active", granularity: "last_tool_call_group", hiddenMessages: 2, note: expect.objectContaining({ what_happened: MULLIGAN_STORY_TEXT.noteWhatHappened }) }),
    ]);
    expect(json.shrinks.map((s: { markerId: string; state: string; applied: boolean }) => [s.markerId, s.state, s.applied])).toEqual([
      [MULLIGAN_MARKER_UUIDS.shrinkTestLog, "cancelled", false],
      [MULLIGAN_MARKER_UUIDS.shrinkGrep, "cancelled", false],
    ]);
    const [span] = json.rewoundSpans;
    expect(json.rewoundSpans).toHaveLength(1);
    expect(json.messages[span.after]).toMatchObject({ role: "toolResult", toolCallId: session.ids.shrinkTestLog.callId });
    expect(json.checkpoints).toEqual([{ name: "before-refactor", entryId: session.ids.checkpointLabel, targetEntryId: session.ids.task1Final }]);
    expect(run(["view", path, "--markers"]).code).toBe(1);
  });

  it("inspect lists each marker with its state, the rewind's note and the shrinks' replacements, and the checkpoints", () => {
    const r = run(["inspect", file()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Self-control markers: 3");
    expect(r.stdout).toMatch(new RegExp(`shrink  ${MULLIGAN_MARKER_UUIDS.shrinkTestLog} cancelled +the last bash result`));
    // The session as it went: on Pi 1.6 the rewind left nothing out (the next request's view applies it).
    expect(r.stdout).toMatch(new RegExp(`rewind  ${rewindId} active +last_tool_call_group · leaves nothing out: pi-mulligan's context filter did nothing on Pi 1.6`));
    expect(r.stdout).toContain(`note: what happened: ${MULLIGAN_STORY_TEXT.noteWhatHappened}`);
    expect(r.stdout).toContain(`replacement: ${MULLIGAN_STORY_TEXT.grepReplacement}`);
    expect(r.stdout).toMatch(new RegExp(`Checkpoints: 1\n  before-refactor +at entry ${session.ids.task1Final}`));
  });
});

describe("a file that is not a session", () => {
  it("inspect and view say so and exit 2, instead of reporting a session written by Pi alone", () => {
    const file = join(tempDir(), "README.md");
    writeFileSync(file, "# A project\n\nSome text.\n- a list\n");
    for (const command of ["inspect", "view"]) {
      const r = run([command, file]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`pi-pruner: ${file} is not a Pi session file: no session header and no entry in its 3 non-blank line(s)\n`);
    }
  });
});

describe("pi-pruner view into a pipe that closes early", () => {
  it("stops quietly, with no stack trace, when the reader has read enough (view … | head -2)", () => {
    const dir = tempDir();
    // Far more output than a pipe holds, so the writer is still writing when the reader goes.
    const b = prunedSessionBuilder();
    for (let i = 0; i < 40; i++) b.user(`question ${i}: ${"x".repeat(20_000)}`);
    const file = b.writeTo(join(dir, "s.jsonl"));
    const r = spawnSync("sh", ["-c", `"${process.execPath}" "${bin}" view "${file}" | head -2`], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: tempDir() } });
    expect(r.status).toBe(0);
    expect(r.stdout.split("\n").filter(Boolean)).toHaveLength(2);
    expect(r.stderr).toBe("");
  });
});

describe("pi-pruner check", () => {
  it("says which paths are protected and by which pattern, in argument order", () => {
    const cwd = tempDir();
    const r = run(["check", "skills/a/SKILL.md", "src/x.ts", "C:\\u\\skills\\x\\ref.md", "--json"], { cwd });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { path: "skills/a/SKILL.md", protected: true, pattern: "**/skills/**/*.md" },
      { path: "src/x.ts", protected: false, pattern: null },
      { path: "C:\\u\\skills\\x\\ref.md", protected: true, pattern: "**/skills/**/*.md" },
    ]);
  });

  it("a settings file that does not parse: the answers come without it, and the exit code is 2", () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, ".pi"));
    writeFileSync(join(cwd, ".pi", "settings.json"), '{ "contextPrune": { "protectedPaths": ["docs/**"] ');
    const r = run(["check", "docs/a.md", "skills/a/SKILL.md", "--json"], { cwd });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).map((x: { protected: boolean }) => x.protected)).toEqual([false, true]);
    expect(r.stderr).toContain(join(cwd, ".pi", "settings.json"));
    expect(r.stderr).toContain("answered without a settings file that could not be read");
  });

  it("--cwd of a folder that does not exist is a usage error, for check and protect", () => {
    const missing = join(tempDir(), "nowhere");
    for (const args of [["check", "a.md", "--cwd", missing], ["protect", "docs/**", "--cwd", missing]]) {
      const r = run(args);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`--cwd ${missing}: no such folder`);
    }
    expect(existsSync(missing)).toBe(false);
  });

  it("uses the project settings of --cwd", () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, ".pi"));
    writeFileSync(join(cwd, ".pi", "settings.json"), '{ "contextPrune": { "protectedPaths": ["docs/**"] } }');
    const r = run(["check", "docs/a.md", "skills/a/SKILL.md", "--cwd", cwd, "--json"]);
    expect(JSON.parse(r.stdout).map((x: { protected: boolean }) => x.protected)).toEqual([true, false]);
  });
});

describe("pi-pruner protect", () => {
  it("adds to the project file, keeping the default pattern, comments and other keys", () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, ".pi"));
    const file = join(cwd, ".pi", "settings.json");
    writeFileSync(file, '{\n  // my model\n  "defaultModel": "x",\n  "contextPrune": { "minBatchChars": 10 }\n}\n');
    const r = run(["protect", "docs/**/*.md"], { cwd });
    expect(r.code).toBe(0);
    const text = readFileSync(file, "utf8");
    expect(text).toContain("// my model");
    expect(text).toContain('"minBatchChars": 10');
    const check = run(["check", "docs/x/y.md", "skills/a/SKILL.md", "--json"], { cwd });
    expect(JSON.parse(check.stdout).map((x: { protected: boolean }) => x.protected)).toEqual([true, true]);
    // No duplicates.
    expect(run(["protect", "docs/**/*.md"], { cwd }).stdout).toContain("already protected");
    expect(readFileSync(file, "utf8").match(/docs\/\*\*\/\*\.md/g)).toHaveLength(1);
  });

  it("--global writes the agent's settings file", () => {
    const agentDir = tempDir();
    const r = run(["protect", "**/PLAN.md", "--global"], { agentDir, cwd: tempDir() });
    expect(r.code).toBe(0);
    const settings = JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8"));
    expect(settings.contextPrune.protectedPaths).toEqual(["**/skills/**/*.md", "**/PLAN.md"]);
  });

  it("--global where the project sets its own list: says the pattern does not reach this folder, and how to add it there", () => {
    const agentDir = tempDir();
    const cwd = realpathSync(tempDir());
    mkdirSync(join(cwd, ".pi"));
    writeFileSync(join(cwd, ".pi", "settings.json"), '{ "contextPrune": { "protectedPaths": ["docs/**"] } }');
    const r = run(["protect", "*.log", "--global"], { agentDir, cwd });
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8")).contextPrune.protectedPaths).toContain("*.log");
    expect(r.stderr).toBe(`note: ${join(cwd, ".pi", "settings.json")} sets its own contextPrune.protectedPaths, which replaces the global list in ${cwd}: there \`*.log\` does not apply (add it there with: pi-pruner protect '*.log')\n`);
    // And indeed: here the global pattern does not protect.
    expect(JSON.parse(run(["check", "a.log", "--json"], { agentDir, cwd }).stdout)[0].protected).toBe(false);
    // Without a project list there is nothing to say.
    expect(run(["protect", "*.tmp", "--global"], { agentDir, cwd: tempDir() }).stderr).toBe("");
  });

  it("refuses a settings file that does not parse and leaves it byte for byte", () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, ".pi"));
    const file = join(cwd, ".pi", "settings.json");
    const broken = '{ "contextPrune": { "protectedPaths": [ }\n';
    writeFileSync(file, broken);
    const r = run(["protect", "x/**"], { cwd });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(file);
    expect(readFileSync(file, "utf8")).toBe(broken);
  });
});

describe("pi-pruner protect with a glob past the bounds", () => {
  it("is a usage error that names the bound, and no settings file is created or changed", () => {
    const cwd = tempDir();
    const agentDir = tempDir();
    const hostile = `${"{a,b}".repeat(20)}c`;
    const r = run(["protect", hostile], { cwd, agentDir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the glob is not added: its braces expand to 1,048,576 patterns (at most 64)");
    expect(existsSync(join(cwd, ".pi"))).toBe(false);
    expect(existsSync(join(agentDir, "settings.json"))).toBe(false);
  });
});

describe("a project settings file nested 5,000 levels deep (it comes with the cloned repository)", () => {
  /** A folder whose `.pi/settings.json` opens 5,000 objects, and that file's path. */
  function deepProject(): { cwd: string; file: string } {
    const cwd = realpathSync(tempDir());
    mkdirSync(join(cwd, ".pi"));
    const file = join(cwd, ".pi", "settings.json");
    writeFileSync(file, '{"a":'.repeat(5000) + "1" + "}".repeat(5000));
    return { cwd, file };
  }
  const warningLine = (file: string) => `warning: project settings: ${file}: nested deeper than 64 levels; its contextPrune settings are ignored\n`;

  it("check: the file named once, no stack, the answers under the defaults, exit 2 (the answers lack that file)", () => {
    const { cwd, file } = deepProject();
    const r = run(["check", "skills/a/SKILL.md", "src/x.ts"], { cwd });
    expect(r.stderr).toBe(`${warningLine(file)}pi-pruner: answered without a settings file that could not be read; fix it and check again\n`);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("protected  skills/a/SKILL.md  (by `**/skills/**/*.md`)\nprunable   src/x.ts\n");
  });

  it("view and inspect with --cwd on it: the same one warning line, and the session still printed", () => {
    const { cwd, file } = deepProject();
    const session = prunedSessionBuilder().writeTo(join(tempDir(), "s.jsonl"));
    const view = run(["view", session, "--cwd", cwd]);
    expect(view.stderr).toBe(warningLine(file));
    expect(view.code).toBe(0);
    expect(view.stdout).toMatch(/^# Model view of .*s\.jsonl at leaf /);
    expect(view.stdout).toContain("tool result · read · c2");
    const inspect = run(["inspect", session, "--cwd", cwd]);
    expect(inspect.stderr).toBe(warningLine(file));
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain("Tool calls: 4");
  });

  it("protect into it: refused in one line naming the file, exit 2 (input that does not parse), the file left as it was", () => {
    const { cwd, file } = deepProject();
    const before = readFileSync(file, "utf8");
    const r = run(["protect", "docs/**"], { cwd });
    expect(r.stderr).toBe(`pi-pruner: ${file}: nested deeper than 64 levels; it was left unchanged\n`);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(readFileSync(file, "utf8")).toBe(before);
  });
});
