// Escape sequences in a session or settings file reach a terminal only as visible text: every
// command of the built bin, run as a person runs it, prints no control character but newline and
// tab, while the crafted text stays readable in escaped form and --json holds it exactly.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { terminalText } from "../../../core/src/cli/terminal-text.ts";

const bin = fileURLToPath(new URL("../../../pi-extension/bin/pi-pruner.js", import.meta.url));

/** Colours, an OSC 52 clipboard write, a screen clear, a C1 CSI, DEL, backspace, CR and a vertical tab: what a hostile writer puts in any string. */
const HOSTILE = "\u001b[31mRED\u001b[0m\u001b]52;c;cHduZWQ=\u0007\u001b[2J\u009b1m\u007f\u0008\r\u000b!";
const bad = (tag: string) => `${tag}${HOSTILE}`;
/** HOSTILE as the text output shows it. */
const SHOWN = "\\u001b[31mRED\\u001b[0m\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\\u009b1m\\u007f\\u0008";
/** HOSTILE where the text output shows JSON (arguments, a settings list): JSON writes a backspace and a CR as \\b and \\r. */
const SHOWN_IN_JSON = "\\u001b[31mRED\\u001b[0m\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\\u009b1m\\u007f\\b\\r\\u000b!";

function crafted(dir: string): string {
  const b = new SessionBuilder({ sessionId: bad("sid"), cwd: `/tmp/${bad("cwd")}` });
  b.raw({ type: "session_info", name: bad("name") });
  b.user(bad("prompt"));
  b.assistant({ toolCalls: [{ name: bad("tool"), id: bad("cid"), args: { path: bad("path"), command: bad("cmd") } }] });
  b.toolResult(bad("cid"), bad("tool"), bad("result"));
  const at = (b.entry(b.lastId) as unknown as { message: { timestamp: number } }).message.timestamp;
  const ref = { shortId: "t1", toolCallId: bad("cid"), resultTimestamp: at };
  b.custom("context-prune-index", { toolCalls: [{ toolCallId: bad("cid"), toolName: bad("tool"), args: { path: bad("path") }, resultText: bad("result"), isError: false, turnIndex: 1, resultTimestamp: at }], refs: [ref] });
  b.customMessage("context-prune-summary", `- \`t1\` ${bad("summary")}`, { toolCallRefs: [ref], toolNames: [bad("tool")], turnIndex: 1 });
  b.assistant(bad("answer"));
  b.custom("mulligan:shrink", { schema: "pi-mulligan", v: 1, kind: "shrink", id: bad("marker"), target: { by_tool_call_id: bad("cid") }, replacement: bad("replacement"), seq: 1, ts: at + 10 });
  b.user("again");
  b.assistant("done");
  return b.writeTo(join(dir, "hostile.jsonl"));
}

function run(args: string[], agentDir: string, cwd: string) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd, env: { ...process.env, PI_CODING_AGENT_DIR: agentDir }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every control character a terminal could act on: C0 but newline and tab, DEL, C1. */
function controls(text: string): string[] {
  return [...text].filter((c) => /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(c)).map((c) => `U+${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function setup() {
  const dir = mkdtempSync(join(tmpdir(), "pp-terminal-"));
  const agentDir = join(dir, "agent");
  const project = join(dir, "project");
  mkdirSync(agentDir);
  mkdirSync(join(project, ".pi"), { recursive: true });
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ contextPrune: { protectedPaths: [`docs/${bad("glob")}/**`] } }));
  writeFileSync(join(project, ".pi", "settings.json"), JSON.stringify({ contextPrune: { protectedPaths: [`src/${bad("glob")}/**`], minBatchChars: bad("number") } }));
  return { dir, agentDir, project, file: crafted(dir) };
}

describe("the command line on text that carries terminal escape sequences", () => {
  it("inspect, view, view --request N, cost, check and protect print no control character, and show the crafted text escaped", () => {
    const { agentDir, project, file } = setup();
    const commands = [
      ["inspect", file],
      ["view", file],
      ["view", file, "--request", "2"],
      ["view", file, "--request", "last"],
      ["cost", file],
      ["check", `src/${bad("glob")}/a.ts`, `docs/${bad("path")}`],
      ["protect", "extra/**", "--global"],
    ];
    const outputs = commands.map((args) => {
      const r = run([...args, "--cwd", project], agentDir, project);
      expect(r.code, `${args[0]}: ${r.stderr}`).toBeLessThan(2);
      expect({ command: args.slice(0, 3).join(" "), controls: controls(r.stdout + r.stderr) }).toEqual({ command: args.slice(0, 3).join(" "), controls: [] });
      return r.stdout + r.stderr;
    });
    const [inspect, view, request2, requestLast, cost, check, protect] = outputs as [string, string, string, string, string, string, string];
    // What the session and settings files said is still there to read, as escapes.
    for (const name of ["sid", "name", "cwd", "summary", "replacement"]) expect(inspect, name).toContain(`${name}${SHOWN}`);
    // Columns of a set width cut a long tool name, path or marker id, after its first escape.
    for (const name of ["tool", "path", "marker"]) expect(inspect, name).toContain(`${name}\\u001b[31mRED`);
    for (const name of ["prompt", "tool", "summary", "answer", "cid"]) expect(view, name).toContain(`${name}${SHOWN}`);
    expect(view).toContain(`"command":"cmd${SHOWN_IN_JSON}"`);
    for (const name of ["prompt", "tool", "cid", "summary"]) expect(request2, name).toContain(`${name}${SHOWN}`);
    expect(requestLast).toContain(`answer${SHOWN}`);
    expect(cost).toContain("# Cost of");
    expect(check).toContain(`src/glob${SHOWN}`);
    expect(check).toContain(`docs/path${SHOWN}`);
    expect(protect).toContain(`docs/glob${SHOWN_IN_JSON}`);
    // A field of one line shows its CR and vertical tab too, where a terminal would have moved the cursor.
    expect(inspect).toContain(`Session sid${SHOWN}\\u000d\\u000b!`);
  });

  it("--json holds the crafted strings exactly, and its text has no raw control character either", () => {
    const { agentDir, project, file } = setup();
    for (const args of [["inspect", file, "--json"], ["view", file, "--json", "--markers"], ["view", file, "--request", "last", "--json"], ["cost", file, "--json"], ["check", "a.ts", "--json"]]) {
      const r = run([...args, "--cwd", project], agentDir, project);
      expect(controls(r.stdout), args.join(" ")).toEqual([]);
      expect(() => JSON.parse(r.stdout), args.join(" ")).not.toThrow();
    }
    const inspect = JSON.parse(run(["inspect", file, "--json"], agentDir, project).stdout);
    expect(inspect.session.id).toBe(bad("sid"));
    expect(inspect.session.cwd).toBe(`/tmp/${bad("cwd")}`);
    expect(inspect.calls[0].toolName).toBe(bad("tool"));
    expect(inspect.calls[0].toolCallId).toBe(bad("cid"));
    expect(inspect.calls[0].path).toBe(bad("path"));
    expect(inspect.markers[0].markerId).toBe(bad("marker"));
    expect(inspect.markers[0].replacement).toBe(bad("replacement"));
    const view = JSON.parse(run(["view", file, "--json", "--markers"], agentDir, project).stdout);
    const call = view.messages[1].content[0];
    expect(call).toMatchObject({ type: "toolCall", id: bad("cid"), name: bad("tool"), arguments: { path: bad("path"), command: bad("cmd") } });
    expect(view.messages[0].content).toBe(bad("prompt"));
  });
});

describe("terminalText", () => {
  it("keeps newlines and tabs in text of many lines, a CR LF line end as a newline; one line shows them", () => {
    expect(terminalText("a\tb\r\nc\rd\u001b[2Je\u009b\u202e")).toBe("a\tb\nc\\u000dd\\u001b[2Je\\u009b\\u202e");
    expect(terminalText("a\tb\nc", { line: true })).toBe("a\\u0009b\\u000ac");
    // On JSON text it changes no string: the escapes are JSON's own.
    const json = JSON.stringify({ s: "x\u009by\u007f\u2066z\u001b" }, null, 2);
    expect(JSON.parse(terminalText(json))).toEqual({ s: "x\u009by\u007f\u2066z\u001b" });
  });
});
