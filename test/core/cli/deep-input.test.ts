// Tool arguments nested far deeper than the engine's own recursion goes (JSON.parse reads them;
// JSON.stringify and structuredClone throw a few thousand levels down): every command of the
// built bin, as a person runs it, finishes, measures them as cut at 100 levels and says so once.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionBuilder } from "../../helpers/session-builder.ts";

const bin = fileURLToPath(new URL("../../../pi-extension/bin/pi-pruner.js", import.meta.url));
const DEEP = "@@DEEP@@";
const NOTE = /^note: entry e2 holds a value nested deeper than 100 levels: it is shown cut at that depth \("\[nested deeper than 100 levels\]"\), and measured and costed so where too deep to be written whole$/;
const MARKER = JSON.stringify("[nested deeper than 100 levels]");

/** A session whose one tool call's arguments are `deepArguments` (JSON text), answered, then one more prompt. */
function session(dir: string, deepArguments: string): string {
  const b = new SessionBuilder({ sessionId: "s-deep", cwd: dir });
  b.user("go");
  b.assistant({ toolCalls: [{ name: "bash", id: "call_1", args: { [DEEP]: true } }] });
  b.toolResult("call_1", "bash", "out");
  b.assistant("ok");
  b.user("more");
  b.assistant("done");
  const file = join(dir, "deep.jsonl");
  writeFileSync(file, b.toJsonl().replace(`{"${DEEP}":true}`, deepArguments));
  return file;
}

function run(args: string[], dir: string) {
  const r = spawnSync(process.execPath, [bin, ...args, "--cwd", dir], { cwd: dir, env: { ...process.env, PI_CODING_AGENT_DIR: join(dir, "agent") }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const shapes = [
  // The arguments object is the first level: 99 arrays are kept below it, then the marker.
  { name: "an array 8,000 deep in a property", depth: 8_000, text: (n: number) => `{"command":${"[".repeat(n)}${"]".repeat(n)}}`, cut: `{"command":${"[".repeat(99)}${MARKER}${"]".repeat(99)}}` },
  { name: "objects 1,000,000 deep as the arguments themselves", depth: 1_000_000, text: (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`, cut: `${'{"a":'.repeat(100)}${MARKER}${"}".repeat(100)}` },
];

describe("the command line on tool arguments nested deeper than the engine recurses", () => {
  for (const shape of shapes) {
    it(`${shape.name}: every command exits 0 with one note, no stack trace, the arguments measured as cut`, () => {
      const dir = mkdtempSync(join(tmpdir(), "pp-deep-"));
      mkdirSync(join(dir, "agent"));
      const file = session(dir, shape.text(shape.depth));
      // go, bash + its arguments, out, ok, more, done: the next request's characters.
      const nextChars = 2 + 4 + shape.cut.length + 3 + 2 + 4 + 4;
      const commands = [["inspect"], ["inspect", "--json"], ["view"], ["view", "--json"], ["view", "--request", "2"], ["view", "--request", "last", "--json"], ["cost"], ["cost", "--json"]];
      const out = new Map<string, string>();
      for (const args of commands) {
        const r = run([args[0]!, file, ...args.slice(1)], dir);
        const name = args.join(" ");
        expect({ name, code: r.code, stderr: r.stderr.split("\n").filter(Boolean) }).toEqual({ name, code: 0, stderr: [expect.stringMatching(NOTE)] });
        out.set(name, r.stdout);
      }
      expect(JSON.parse(out.get("inspect --json")!).totals).toEqual({ rawChars: nextChars, modelChars: nextChars });
      expect(out.get("inspect")).toContain(`${nextChars.toLocaleString("en-US")} chars raw`);
      for (const name of ["view", "view --request 2"]) expect(out.get(name), name).toContain("[nested deeper than 100 levels]");
      const sent = JSON.parse(out.get("view --json")!);
      expect(sent.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant"]);
      expect(JSON.stringify(sent[1].content[0].arguments)).toContain('"[nested deeper than 100 levels]"');
      expect(JSON.parse(out.get("view --request last --json")!)).toHaveLength(5);
      const cost = JSON.parse(out.get("cost --json")!);
      expect(cost.requests).toHaveLength(3);
      // The second request sent the call's arguments, as cut.
      const second = cost.requests[1];
      expect(second.read + second.written + second.uncached).toBeGreaterThan(shape.cut.length / 4);
      expect(out.get("cost")!.split("\n").filter((l) => /^\d+ /.test(l))).toHaveLength(3);

      // check reads settings, not sessions: project settings nested as deep get the one warning
      // any settings too deep get, and the documented exit 2 (answered without them).
      mkdirSync(join(dir, ".pi"));
      writeFileSync(join(dir, ".pi", "settings.json"), `{"contextPrune":${"[".repeat(shape.depth)}${"]".repeat(shape.depth)}}`);
      const check = run(["check", "src/a.ts"], dir);
      expect(check.code).toBe(2);
      expect(check.stdout).toBe("prunable   src/a.ts\n");
      expect(check.stderr.split("\n").filter(Boolean)).toEqual([expect.stringMatching(/^warning: project settings: .*settings\.json: nested deeper than 64 levels; its contextPrune settings are ignored$/), expect.stringMatching(/^pi-pruner: answered without a settings file/)]);
    });
  }
});
