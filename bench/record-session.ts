// Records real Pi 1.6 sessions for the cost replay: the real `pi` binary, without the pruner,
// works through coding tasks in a generated TypeScript project, driven by the scripted model
// server (thinking, file reads, greps, builds, failing tests, a failed edit, a write, the release
// skill). Every tool result in the files is what Pi's own tools produced. The short session has
// three tasks; the long one (bench/lib/long-session.ts) ten tasks and more than 150 requests.
//
//   node bench/record-session.ts           → both sessions
//   node bench/record-session.ts --short   → bench/fixtures/recorded-session.jsonl (+ .meta.json)
//   node bench/record-session.ts --long    → bench/fixtures/recorded-long-session.jsonl (+ .meta.json)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startModelServer, type Reply, type ModelRequest } from "../test/helpers/model-server.ts";
import { createPiWorkspace } from "../test/helpers/pi-workspace.ts";
import { assertRunOk, runPi } from "../test/helpers/run-pi.ts";
import { neutralizeSessionText, scriptedAgent } from "../test/helpers/real-session.ts";
import { readFixtureProject } from "./lib/fixture-project.ts";
import { Rng, SKILL_PATH, prose, skillText, sourceFile } from "./lib/gen.ts";
import { LONG_FILES, LONG_PROMPTS, LONG_SCRIPT, bash, read, think, turn } from "./lib/long-session.ts";

const here = dirname(fileURLToPath(import.meta.url));
export const RECORDED_SESSION = join(here, "fixtures", "recorded-session.jsonl");
export const RECORDED_META = join(here, "fixtures", "recorded-session.meta.json");
export const RECORDED_LONG_SESSION = join(here, "fixtures", "recorded-long-session.jsonl");
export const RECORDED_LONG_META = join(here, "fixtures", "recorded-long-session.meta.json");

export interface RecordedMeta {
  /** Characters of Pi's system prompt plus its tool declarations on the first request (without the pruner). */
  headChars: number;
  systemChars: number;
  toolsChars: number;
  requests: number;
  piVersion: string;
  recordedWith: string;
  /** User prompts of the session (absent in recordings made before it was recorded). */
  tasks?: number;
}

const MODULES = ["stats", "session", "render", "config", "cache", "cli"];
export const FILES: Record<string, string> = {};
for (const m of MODULES) {
  for (const [i, part] of ["index", "types", "format", "total"].entries()) {
    const path = `src/${m}/${part}.ts`;
    FILES[path] = sourceFile(path, 1500 + ((i * 1300 + m.length * 700) % 5200));
  }
}
FILES["src/stats/total.ts"] += "export function total(values: number[]): number {\n  return values.reduce((a, b) => a + b, 1); // BUG-START-AT-ONE\n}\n";
FILES[SKILL_PATH] = skillText();
FILES["CHANGELOG.md"] = `# Changelog\n\n## 0.3.0\n\n${Array.from({ length: 30 }, (_, i) => `- ${prose(new Rng(i + 1), 10)}`).join("\n")}\n`;
FILES["package.json"] = JSON.stringify({ name: "demo-project", version: "0.3.0", type: "module", scripts: { build: "node scripts/build.mjs", test: "node scripts/test.mjs" } }, null, 2) + "\n";
// The project's scripts: real files in bench/fixtures/short-session-project/scripts/.
Object.assign(FILES, readFixtureProject("short-session-project"));

export const PROMPTS = [
  "The stats total is off by one for empty inputs. Find the cause and fix it; keep the tests green.",
  "Add a formatTotal helper to src/stats/format.ts that prints totals with thousands separators, and use it from the CLI.",
  "Prepare release 0.4.0 following the release skill: bump the version, update the changelog, build and test.",
];

const firstLine = (path: string, at: number) => FILES[path]!.split("\n")[at]!;

export const SCRIPT: Reply[][] = [
  [
    turn(1, [bash("ls -R src")], "Let me look at the layout first."),
    turn(2, [read("src/stats/total.ts"), read("src/stats/index.ts")]),
    turn(3, [bash("grep -rn \"const\" src | head -70")]),
    turn(4, [bash("node scripts/test.mjs")], "Running the tests to see the failure."),
    turn(5, [read("src/stats/types.ts")]),
    turn(6, [{ name: "edit", arguments: { path: "src/stats/total.ts", edits: [{ oldText: "return values.reduce((a, b) => a + b, 1);", newText: "return values.reduce((a, b) => a + b, 0);" }] } }]),
    turn(7, [{ name: "edit", arguments: { path: "src/stats/total.ts", edits: [{ oldText: "  return values.reduce((a, b) => a + b, 1); // BUG-START-AT-ONE", newText: "  return values.reduce((a, b) => a + b, 0);" }] } }]),
    turn(8, [bash("node scripts/test.mjs")]),
    turn(9, [read("src/stats/total.ts")]),
    turn(10, [bash("node scripts/build.mjs")]),
    { thinking: think(11, 80), text: "Fixed: `total` started its reduce at 1, so an empty list summed to 1. It now starts at 0; tests and build pass." },
  ],
  [
    turn(12, [read("src/stats/format.ts")]),
    turn(13, [read("src/cli/index.ts"), read("src/cli/format.ts")]),
    turn(14, [bash("grep -rn \"return\" src/cli src/stats | head -50")]),
    turn(15, [{ name: "edit", arguments: { path: "src/stats/format.ts", edits: [{ oldText: firstLine("src/stats/format.ts", 0), newText: `export function formatTotal(n: number): string {\n  return n.toLocaleString("en-US");\n}\n${firstLine("src/stats/format.ts", 0)}` }] } }]),
    turn(16, [read("src/stats/format.ts")]),
    turn(17, [{ name: "edit", arguments: { path: "src/cli/index.ts", edits: [{ oldText: firstLine("src/cli/index.ts", 0), newText: `import { formatTotal } from "../stats/format.ts";\n${firstLine("src/cli/index.ts", 0)}` }] } }]),
    turn(18, [{ name: "write", arguments: { path: "src/stats/format.test.ts", content: sourceFile("src/stats/format.test.ts", 1800) } }]),
    turn(19, [bash("node scripts/build.mjs")]),
    turn(20, [bash("node scripts/test.mjs")]),
    turn(21, [read("src/cli/index.ts")]),
    turn(22, [read("src/stats/format.ts")], "Re-reading to double-check the helper."),
    { thinking: think(23, 90), text: "Added `formatTotal` (thousands separators via toLocaleString) in src/stats/format.ts, imported it in the CLI, and added a test file. Build and tests pass." },
  ],
  [
    turn(24, [read(SKILL_PATH)], "Reading the release skill first."),
    turn(25, [read("package.json"), read("CHANGELOG.md")]),
    turn(26, [bash("node scripts/test.mjs")]),
    turn(27, [bash("node scripts/build.mjs")]),
    turn(28, [{ name: "edit", arguments: { path: "package.json", edits: [{ oldText: "\"version\": \"0.3.0\"", newText: "\"version\": \"0.4.0\"" }] } }]),
    turn(29, [{ name: "edit", arguments: { path: "CHANGELOG.md", edits: [{ oldText: "# Changelog\n", newText: "# Changelog\n\n## 0.4.0\n\n- fix: stats total of an empty list is 0\n- feat: formatTotal helper used by the CLI\n" }] } }]),
    turn(30, [bash("git status 2>&1 | head -20; ls -la")]),
    turn(31, [read(SKILL_PATH)], "Checking the remaining gates of the skill."),
    turn(32, [bash("node scripts/test.mjs && node scripts/build.mjs")]),
    { thinking: think(33, 70), text: "Release 0.4.0 is prepared: version bumped, changelog updated, tests and build pass. Tagging is left to you, as the skill asks." },
  ],
];

/** What one recording is made of: the project, the prompts, the script, and where it goes. */
export interface Recording {
  files: Record<string, string>;
  prompts: string[];
  script: Reply[][];
  session: string;
  meta: string;
  recordedWith: string;
  timeoutMs: number;
}

export const SHORT_RECORDING: Recording = {
  files: FILES,
  prompts: PROMPTS,
  script: SCRIPT,
  session: RECORDED_SESSION,
  meta: RECORDED_META,
  recordedWith: "node bench/record-session.ts (real pi -p, scripted model server, no extension)",
  timeoutMs: 120_000,
};

export const LONG_RECORDING: Recording = {
  files: LONG_FILES,
  prompts: LONG_PROMPTS,
  script: LONG_SCRIPT,
  session: RECORDED_LONG_SESSION,
  meta: RECORDED_LONG_META,
  recordedWith: "node bench/record-session.ts --long (real pi -p, scripted model server, no extension)",
  timeoutMs: 900_000,
};

export async function recordSession(recording: Recording = SHORT_RECORDING): Promise<{ meta: RecordedMeta; text: string }> {
  const server = await startModelServer();
  const isMain = (req: ModelRequest) => req.toolNames.includes("read");
  server.respond = scriptedAgent(recording.prompts, recording.script, { isMain });
  const ws = createPiWorkspace({ baseUrl: server.baseUrl, files: recording.files, model: { contextWindow: 200_000, maxTokens: 8192, reasoning: true }, prefix: "pprb-record-" });
  try {
    const run = await runPi({ workspace: ws, prompts: recording.prompts, timeoutMs: recording.timeoutMs });
    assertRunOk(run);
    if (!run.sessionFile) throw new Error("no session file was written");
    if (server.warnings.length) throw new Error(`the script did not fit the run:\n${server.warnings.join("\n")}`);
    const first = server.chatRequests.find(isMain)!;
    const systemChars = first.systemText.length;
    const toolsChars = JSON.stringify(first.body.tools ?? []).length;
    const pkg = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "@earendil-works", "pi-coding-agent", "package.json"), "utf8")) as { version: string };
    const meta: RecordedMeta = {
      headChars: systemChars + toolsChars,
      systemChars,
      toolsChars,
      requests: server.chatRequests.filter(isMain).length,
      piVersion: pkg.version,
      recordedWith: recording.recordedWith,
      tasks: recording.prompts.length,
    };
    const text = neutralizeSessionText(readFileSync(run.sessionFile, "utf8"), ws);
    return { meta, text };
  } finally {
    await server.close();
    ws.cleanup();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const only = process.argv.includes("--long") ? [LONG_RECORDING] : process.argv.includes("--short") ? [SHORT_RECORDING] : [SHORT_RECORDING, LONG_RECORDING];
  for (const recording of only) {
    const { meta, text } = await recordSession(recording);
    mkdirSync(dirname(recording.session), { recursive: true });
    writeFileSync(recording.session, text);
    writeFileSync(recording.meta, JSON.stringify(meta, null, 2) + "\n");
    console.log(`wrote ${recording.session} (${text.length} chars, ${meta.requests} model requests, ${meta.tasks} tasks, head ${meta.headChars} chars)`);
  }
}
