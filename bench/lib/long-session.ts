// The long session that bench/record-session.ts records with the real `pi`: a generated
// TypeScript project of about forty files whose own scripts (tests, type check, build, CI, a
// benchmark; real files in bench/fixtures/long-session-project/scripts/) report what is wrong
// with the sources as they are on disk, and ten tasks played by the scripted model through Pi's
// real read, bash, edit and write tools. The scripts print what a real tool chain prints: long
// logs with the errors at their end, a CI log of several hundred lines with the build error in its
// middle and the failing test names at its end (kept under the size at which Pi's bash tool cuts
// output), failing tests that the edits then fix. Everything here is deterministic: the project,
// the prompts and the replies.
import type { Reply } from "../../test/helpers/model-server.ts";
import { readFixtureProject } from "./fixture-project.ts";
import { Rng, SKILL_PATH, prose, skillText, sourceFile } from "./gen.ts";

type Call = { name: string; arguments: Record<string, unknown> };

export const think = (seed: number, words: number) => prose(new Rng(seed), words);
export const read = (path: string): Call => ({ name: "read", arguments: { path } });
const readRange = (path: string, offset: number, limit: number): Call => ({ name: "read", arguments: { path, offset, limit } });
export const bash = (command: string): Call => ({ name: "bash", arguments: { command } });
const edit = (path: string, ...edits: [oldText: string, newText: string][]): Call => ({
  name: "edit",
  arguments: { path, edits: edits.map(([oldText, newText]) => ({ oldText, newText })) },
});
const write = (path: string, content: string): Call => ({ name: "write", arguments: { path, content } });

/** One tool turn of the scripted model: thinking (of a length set by the seed), optional text, the calls. */
export function turn(seed: number, calls: Call[], text?: string): Reply {
  return { thinking: think(seed, 40 + (seed * 37) % 160), text, toolCalls: calls, chunkChars: 4096 };
}

// ------------------------------------------------------------------------------------------------
// The project: generated code with hand-written blocks the tasks are about.

const TOTAL = "export function total(values: number[]): number {\n  return values.reduce((a, b) => a + b, 1);\n}\n";
const CONFIG_TYPE =
  'export interface Config {\n  /** How deep nested sections are merged. */\n  depth: number;\n  /** The largest depth validateConfig accepts. */\n  maxDepth: number;\n  theme: "light" | "dark";\n  cacheDir: string;\n  /** How many refs a summary may list. */\n  refs: number;\n}\n';
const DEFAULTS = 'export const DEFAULTS: Config = { depth: 2, maxDepth: 8, theme: "dark", cacheDir: ".cache/demo", refs: 20 };\n';
const MERGE = 'export function mergeConfig(base: Config, options: Partial<Config>): Config {\n  const depth: number = options.depth ?? "2";\n  return { ...base, ...options, depth };\n}\n';
const VALIDATE =
  'export function validateConfig(config: Config): string[] {\n  const problems: string[] = [];\n  if (config.depth < 0) problems.push("depth must not be negative");\n  if (config.depth > config.limits.maxDepth) problems.push("depth is above maxDepth");\n  return problems;\n}\n';
const WRAP = "export function wrapLine(line: string, width: number, gutter: number): string[] {\n  const out: string[] = [];\n  for (let at = 0; at < line.length; at += width) out.push(line.slice(at, at + width - gutter);\n  return out;\n}\n";
const RUN_STATS = 'export function runStats(args: string[], values: number[]): string {\n  return "Total: " + formatTable([[formatTotal(total(values))]]);\n}\n';
const FLAGS = 'export const KNOWN_FLAGS = ["--help", "--version", "--verbose"];\n';
const KEY = "/** The cache key of an entry: its id and version. */\nexport function cacheKey(entry: { id: string; version: number }): string {\n  return `" + "${entry.id}@${entry.version}" + "`;\n}\n";
const REMEMBER = "export function remember(map: Map<string, unknown>, entry: { id: string; version: number }, value: unknown): void {\n  map.set(cacheKey(entry), value);\n}\n";
const ENTRY_PATH = 'export function entryPath(dir: string, entry: { id: string; version: number }): string {\n  return dir + "/" + cacheKey(entry) + ".json";\n}\n';
const APPEND = 'export function appendEntry(lines: string[], id: string, body: string): string {\n  const key = cacheKey({ id, version: 1 });\n  lines.push(key + "\\t" + body);\n  return key;\n}\n';
const SPLIT_LINES_LOOP = "  for (let i = 0; i < lines.length; i++) {\n    const offset = lines.slice(0, i).join(\"\\n\").length;\n    out.push(offset + \":\" + lines[i]);\n  }\n";
const SPLIT_LINES = `/** Each line of a session file prefixed with its character offset. */\nexport function splitLines(text: string): string[] {\n  const lines = text.split("\\n");\n  const out: string[] = [];\n${SPLIT_LINES_LOOP}  return out;\n}\n`;
const BYTES = "export function formatBytes(n: number): string {\n  return n + \" B\";\n}\n";
const README_CONFIG = "## Configuration\n\nThe options are not documented yet.\n";

export const LONG_FILES: Record<string, string> = {};

/** A source file: an optional import header, generated code, and `block` at `share` of the way in. */
function put(path: string, chars: number, block = "", share = 0.5, header = ""): void {
  const before = block ? sourceFile(path, Math.round(chars * share), 3) : sourceFile(path, chars, 3);
  const after = block && share < 1 ? sourceFile(`${path}#rest`, Math.round(chars * (1 - share)), 3) : "";
  LONG_FILES[path] = header + before + block + after;
}

put("src/stats/index.ts", 2400);
put("src/stats/types.ts", 1800);
put("src/stats/total.ts", 3200, TOTAL, 0.7);
put("src/stats/format.ts", 2600, "export function formatTotal(n: number): string {\n  return n.toLocaleString(\"en-US\");\n}\n", 0.3);
put("src/config/index.ts", 1500);
put("src/config/types.ts", 2200, CONFIG_TYPE, 0.4);
put("src/config/defaults.ts", 1200, DEFAULTS, 0.6, 'import type { Config } from "./types.ts";\n');
put("src/config/merge.ts", 3400, MERGE, 0.55, 'import type { Config } from "./types.ts";\n');
put("src/config/validate.ts", 2800, VALIDATE, 0.5, 'import type { Config } from "./types.ts";\n');
put("src/render/index.ts", 2600);
put("src/render/types.ts", 2000);
put("src/render/layout.ts", 16_000, WRAP, 0.45);
put("src/render/theme.ts", 3000);
put("src/session/index.ts", 2200);
put("src/session/types.ts", 2600);
put("src/session/reader.ts", 30_000, SPLIT_LINES, 0.6);
put("src/session/writer.ts", 3600, APPEND, 0.5, 'import { cacheKey } from "../cache/key.ts";\n');
put("src/cache/index.ts", 1400, "", 0.5, 'export { cacheKey } from "./key.ts";\n');
put("src/cache/types.ts", 1600);
put("src/cache/key.ts", 1200, KEY, 0.5);
put("src/cache/store.ts", 3000, REMEMBER, 0.5, 'import { cacheKey } from "./key.ts";\n');
put("src/cli/index.ts", 3000, RUN_STATS, 0.5, 'import { total } from "../stats/total.ts";\nimport { formatTotal } from "../stats/format.ts";\nimport { formatTable } from "../format/table.ts";\n');
put("src/cli/args.ts", 1800, FLAGS, 0.3);
put("src/cli/format.ts", 2400);
put("src/store/index.ts", 1600);
put("src/store/types.ts", 1400);
put("src/store/disk.ts", 2600, ENTRY_PATH, 0.5, 'import { cacheKey } from "../cache/key.ts";\n');
put("src/format/index.ts", 1200);
put("src/format/bytes.ts", 1600, BYTES, 0.5);
put("src/format/table.ts", 3800);

LONG_FILES[SKILL_PATH] = skillText();
LONG_FILES["package.json"] =
  JSON.stringify(
    {
      name: "demo-project",
      version: "0.3.0",
      type: "module",
      scripts: { build: "node scripts/build.mjs", test: "node scripts/test.mjs", typecheck: "node scripts/typecheck.mjs", ci: "node scripts/ci.mjs", bench: "node scripts/bench.mjs" },
    },
    null,
    2,
  ) + "\n";
LONG_FILES["tsconfig.json"] = JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", strict: true, noEmit: true, allowImportingTsExtensions: true }, include: ["src", "test"] }, null, 2) + "\n";
LONG_FILES["CHANGELOG.md"] =
  "# Changelog\n\n" +
  ["0.3.0", "0.2.0", "0.1.0"].map((v, n) => `## ${v}\n\n${Array.from({ length: 24 }, (_, i) => `- ${prose(new Rng(100 * n + i + 1), 8 + (i % 9))}`).join("\n")}\n`).join("\n");
LONG_FILES["README.md"] = [
  "# demo-project\n\nA small command line tool that reads session files, totals what is in them and renders a report.\n",
  `## Install\n\n${prose(new Rng(501), 60)}.\n\n    npm install demo-project\n`,
  `## Usage\n\n${Array.from({ length: 8 }, (_, i) => prose(new Rng(510 + i), 70) + ".").join("\n\n")}\n`,
  README_CONFIG,
  `## Architecture\n\n${Array.from({ length: 20 }, (_, i) => `### ${prose(new Rng(530 + i), 3)}\n\n${prose(new Rng(560 + i), 95)}.`).join("\n\n")}\n`,
  `## FAQ\n\n${Array.from({ length: 10 }, (_, i) => `**${prose(new Rng(600 + i), 8)}?**\n\n${prose(new Rng(620 + i), 50)}.`).join("\n\n")}\n`,
].join("\n");

// The project's scripts (bench/fixtures/long-session-project/scripts/) read the sources as they are
// now, so what they print follows the edits.
Object.assign(LONG_FILES, readFixtureProject("long-session-project"));

// ------------------------------------------------------------------------------------------------
// The tasks and the scripted model's replies.

export const LONG_PROMPTS = [
  "The stats total is off by one for empty inputs: total([]) returns 1. Find the cause and fix it; keep the stats tests green.",
  "`node scripts/typecheck.mjs` reports errors in src/config. Fix them without changing the Config type.",
  "CI is red and its log is long. Find what fails in `node scripts/ci.mjs` and fix it.",
  "Add a --json flag to the CLI's stats command that prints the totals as JSON; cover it with a test in test/cli/json.test.ts.",
  "Rename cacheKey to entryKey everywhere; keep cacheKey exported from src/cache/index.ts as a deprecated alias so the public API stays.",
  "Reading a big session is slow: `node scripts/bench.mjs` is over its budget. Find out why and fix it.",
  "Document every config option in README.md's Configuration section: name, type, default and what it does.",
  "Add a formatKb helper to src/format/bytes.ts (one decimal, 1024 bytes per kB), use it for the sizes the CLI prints, and test it.",
  "Prepare release 0.4.0 following the release skill: bump the version, update the changelog, and run every gate.",
  "Write a short summary of today's changes for the pull request description; check each change in the files before you describe it.",
];

/** A line of `path` (as generated) that occurs in it once, for an edit that inserts above it. */
function uniqueLine(path: string): string {
  const lines = LONG_FILES[path]!.split("\n");
  const line = lines.find((l) => l.length > 30 && lines.indexOf(l) === lines.lastIndexOf(l));
  if (!line) throw new Error(`no unique line in ${path}`);
  return line;
}

/** 1-based line of the first line of `path` (as generated) that holds `needle`. */
function lineOf(path: string, needle: string): number {
  const i = LONG_FILES[path]!.split("\n").findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`${needle} is not in ${path}`);
  return i + 1;
}

const JSON_TEST = `import { describe, expect, it } from "vitest";
import { runStats } from "../../src/cli/index.ts";

describe("runStats", () => {
  it("prints the totals as JSON with --json", () => {
    const out = JSON.parse(runStats(["--json"], [1000, 234]));
    expect(out).toEqual({ total: 1234, count: 2 });
  });
  it("prints a table without it", () => {
    expect(runStats([], [1, 2])).toContain("Total");
  });
});
`;

const BYTES_TEST = `import { describe, expect, it } from "vitest";
import { formatKb } from "../../src/format/bytes.ts";

describe("formatKb", () => {
  it("uses 1024 bytes per kB", () => {
    expect(formatKb(10240)).toBe("10.0 kB");
  });
  it("keeps one decimal", () => {
    expect(formatKb(1536)).toBe("1.5 kB");
  });
});
`;

const CONFIG_TABLE = `## Configuration

Options live in \`demo.config.json\`; every key is optional.

| Option | Type | Default | What it does |
| --- | --- | --- | --- |
| \`depth\` | number | \`2\` | How deep nested sections are merged. |
| \`maxDepth\` | number | \`8\` | The largest depth \`validateConfig\` accepts. |
| \`theme\` | \`"light"\` or \`"dark"\` | \`"dark"\` | Colours of the rendered report. |
| \`cacheDir\` | string | \`".cache/demo"\` | Where cached entries are stored, one file per \`entryKey\`. |
| \`refs\` | number | \`20\` | How many refs a summary may list. |
`;

function buildScript(): Reply[][] {
  let seed = 1000;
  const t = (calls: Call[], text?: string) => turn(++seed, calls, text);
  const done = (text: string): Reply => ({ thinking: think(++seed, 60 + (seed % 60)), text });
  const wrapAt = lineOf("src/render/layout.ts", "export function wrapLine(");
  const splitAt = lineOf("src/session/reader.ts", "export function splitLines(");
  const configAt = lineOf("README.md", "## Configuration");
  return [
    [
      t([bash("ls -R src | head -60")], "Let me look at the layout first."),
      t([read("src/stats/total.ts"), read("src/stats/index.ts")]),
      t([bash("wc -l src/stats/*.ts src/cli/*.ts")]),
      t([bash('grep -rn "export function" src/stats | head -30')]),
      t([bash('grep -rn "reduce(" src | head -40')]),
      t([bash("node scripts/test.mjs stats")], "Running the stats tests to see the failure."),
      t([read("src/stats/types.ts")]),
      t([bash('grep -rn "total(" src --include=*.ts | head -30')]),
      t([edit("src/stats/total.ts", ["  return values.reduce((acc, v) => acc + v, 1);", "  return values.reduce((acc, v) => acc + v, 0);"])]),
      t([read("src/stats/total.ts")], "The edit did not match; re-reading the file."),
      t([edit("src/stats/total.ts", ["  return values.reduce((a, b) => a + b, 1);", "  return values.reduce((a, b) => a + b, 0);"])]),
      t([bash("node scripts/test.mjs stats")]),
      t([read("src/stats/format.ts"), read("src/cli/index.ts")], "Checking the callers still get what they expect."),
      t([bash("node scripts/test.mjs stats cli")]),
      t([bash('grep -rn "formatTotal" src')]),
      t([bash("node scripts/typecheck.mjs 2>&1 | tail -8")], "A last type check of the whole project."),
      done("Fixed: `total` started its reduce at 1, so an empty list summed to 1. It now starts at 0; the stats and CLI tests pass."),
    ],
    [
      t([bash("node scripts/typecheck.mjs")]),
      t([read("src/config/merge.ts"), read("src/config/types.ts")]),
      t([bash('grep -rn "depth" src/config')]),
      t([bash('grep -rn "mergeConfig\\|validateConfig" src')]),
      t([edit("src/config/merge.ts", ['  const depth: number = options.depth ?? "2";', "  const depth: number = options.depth ?? base.depth;"])], "The fallback was a string; the base config already has the default depth."),
      t([bash("node scripts/typecheck.mjs 2>&1 | tail -12")]),
      t([read("src/config/validate.ts")]),
      t([bash("node scripts/test.mjs config")]),
      t([read("src/config/defaults.ts"), read("src/config/index.ts")]),
      t([bash('grep -rn "limits" src | head -20')]),
      t([bash('grep -rn "Config\\b" src --include=*.ts | head -30')]),
      t([edit("src/config/validate.ts", ["config.depth > config.limits.maxDepth", "config.depth > config.maxDepth"])]),
      t([bash("node scripts/test.mjs config")]),
      t([bash("node scripts/typecheck.mjs")]),
      t([read("src/config/merge.ts")], "Re-reading merge.ts to double-check the fix."),
      t([bash("node scripts/test.mjs config stats")]),
      done("Both errors in src/config are fixed: `mergeConfig` fell back to the string \"2\" (now the base config's depth) and `validateConfig` read a `limits` field that Config does not have (now `maxDepth`). The type check still reports a syntax error in src/render/layout.ts, outside src/config; I left it."),
    ],
    [
      t([bash("node scripts/ci.mjs")], "Running CI as it runs on the server."),
      t([bash('node scripts/ci.mjs 2>&1 | grep -n "ERROR\\|FAIL"')], "The log is long; finding the failures in it."),
      t([bash('grep -rn "wrapLine" src')]),
      t([read("src/render/layout.ts")]),
      t([read("src/render/index.ts"), read("src/render/types.ts")]),
      t([edit("src/render/layout.ts", ["out.push(line.slice(at, at + width - gutter);", "out.push(line.slice(at, at + width - gutter));"])], "The slice call is missing its closing parenthesis."),
      t([bash("node scripts/test.mjs render")]),
      t([readRange("src/render/layout.ts", wrapAt, 8)]),
      t([edit("src/render/layout.ts", ["at += width)", "at += width - gutter)"])], "Each slice takes width - gutter characters, so the loop must advance by the same amount."),
      t([bash("node scripts/test.mjs render")]),
      t([bash('grep -rn "gutter" src/render | head -20')]),
      t([read("src/render/theme.ts")]),
      t([bash("node scripts/build.mjs 2>&1 | tail -6")]),
      t([bash("node scripts/typecheck.mjs 2>&1 | tail -5")]),
      t([bash("node scripts/ci.mjs")]),
      done("CI is green. Two bugs in `wrapLine` (src/render/layout.ts): a missing `)` broke the build, and the loop advanced by `width` while each slice took `width - gutter` characters, which dropped text on wrapped lines. Both are fixed; lint, build and all tests pass."),
    ],
    [
      t([read("src/cli/index.ts"), read("src/cli/args.ts")]),
      t([bash('grep -rn "KNOWN_FLAGS\\|runStats" src')]),
      t([read("src/format/table.ts")]),
      t([read("src/cli/format.ts")]),
      t([read("src/stats/format.ts")], "Re-reading formatTotal: the JSON output should carry the raw number."),
      t([bash("ls test 2>&1; ls src/cli")]),
      t([write("test/cli/json.test.ts", JSON_TEST)], "Writing the test first."),
      t([bash("node scripts/test.mjs cli")]),
      t([edit("src/cli/index.ts", ['  return "Total: " + formatTable([[formatTotal(total(values))]]);', '  if (args.includes("--json")) return JSON.stringify({ total: total(values), count: values.length });\n  return "Total: " + formatTable([[formatTotal(total(values))]]);'])]),
      t([bash("node scripts/test.mjs cli")]),
      t([edit("src/cli/args.ts", [FLAGS.trimEnd(), 'export const KNOWN_FLAGS = ["--help", "--version", "--verbose", "--json"];'])]),
      t([bash("node scripts/build.mjs")]),
      t([read("src/cli/index.ts")], "Re-reading the command to check the flag handling."),
      t([bash("node scripts/test.mjs")]),
      t([bash("node scripts/typecheck.mjs 2>&1 | tail -4")]),
      done("`stats --json` now prints `{\"total\": …, \"count\": …}` (src/cli/index.ts), `--json` is a known flag (src/cli/args.ts), and test/cli/json.test.ts covers both outputs. Build and the whole test suite pass."),
    ],
    [
      t([bash('grep -rn "cacheKey" src')]),
      t([bash('grep -rln "cacheKey" src test 2>/dev/null')]),
      t([read("src/cache/key.ts")]),
      t([edit("src/cache/key.ts", ["export function cacheKey(entry", "export function entryKey(entry"])]),
      t([bash("node scripts/typecheck.mjs")], "The type check lists every place that still uses the old name."),
      t([read("src/cache/store.ts"), read("src/cache/index.ts")]),
      t([edit("src/cache/store.ts", ['import { cacheKey } from "./key.ts";', 'import { entryKey } from "./key.ts";'], ["  map.set(cacheKey(entry), value);", "  map.set(entryKey(entry), value);"])]),
      t([edit("src/cache/index.ts", ['export { cacheKey } from "./key.ts";', '/** @deprecated Use entryKey. */\nexport { entryKey, entryKey as cacheKey } from "./key.ts";'])]),
      t([edit("src/store/disk.ts", ['import { cacheKey } from "../cache/key.ts";', 'import { entryKey } from "../cache/key.ts";'], ['    return dir + "/" + cacheKey(entry) + ".json";', '    return dir + "/" + entryKey(entry) + ".json";'])]),
      t([read("src/store/disk.ts")], "The indentation was wrong; reading the file."),
      t([edit("src/store/disk.ts", ['import { cacheKey } from "../cache/key.ts";', 'import { entryKey } from "../cache/key.ts";'], ['  return dir + "/" + cacheKey(entry) + ".json";', '  return dir + "/" + entryKey(entry) + ".json";'])]),
      t([bash("node scripts/build.mjs")]),
      t([read("src/store/index.ts")]),
      t([read("src/session/writer.ts")]),
      t([edit("src/session/writer.ts", ['import { cacheKey } from "../cache/key.ts";', 'import { entryKey } from "../cache/key.ts";'], ["  const key = cacheKey({ id, version: 1 });", "  const key = entryKey({ id, version: 1 });"])]),
      t([bash('grep -rn "cacheKey" src')]),
      t([bash("node scripts/typecheck.mjs 2>&1 | tail -4")]),
      t([bash("node scripts/test.mjs cache store session")]),
      t([read("src/cache/index.ts")]),
      done("Renamed `cacheKey` to `entryKey` in src/cache/key.ts and every caller (cache/store.ts, store/disk.ts, session/writer.ts). src/cache/index.ts still exports `cacheKey` as a deprecated alias of `entryKey`. Type check, build and tests pass."),
    ],
    [
      t([bash("node scripts/bench.mjs")]),
      t([read("src/session/reader.ts")]),
      t([bash('grep -rn "splitLines" src')]),
      t([bash("wc -c src/session/*.ts")]),
      t([read("src/session/index.ts"), read("src/session/types.ts")]),
      t([readRange("src/session/reader.ts", splitAt, 12)], "Looking at splitLines again, it is the hot spot in the profile."),
      t([edit("src/session/reader.ts", [SPLIT_LINES_LOOP, "  let offset = 0;\n  for (let i = 0; i < lines.length; i++) {\n    out.push(offset + \":\" + lines[i]);\n    offset += lines[i].length + 1;\n  }\n"])], "Each line re-joined every line before it: quadratic. Keep a running offset instead."),
      t([bash("node scripts/bench.mjs")]),
      t([read("src/session/reader.ts")], "Reading the whole reader again to check nothing else depends on the old loop."),
      t([bash('grep -n "splitLines\\|readSession" src/session/reader.ts')]),
      t([bash("node scripts/test.mjs session")]),
      t([read("src/session/writer.ts")]),
      t([bash("node scripts/typecheck.mjs 2>&1 | tail -4")]),
      done("`splitLines` in src/session/reader.ts joined all earlier lines to compute each line's offset, which is quadratic in the file's line count. It now keeps a running offset: the benchmark's median went from 8402 ms to 211 ms (budget 1000 ms); tests pass."),
    ],
    [
      t([read("README.md")]),
      t([read("src/config/types.ts"), read("src/config/defaults.ts")]),
      t([bash('grep -n "^## " README.md')]),
      t([read("src/config/validate.ts")]),
      t([edit("README.md", [README_CONFIG, CONFIG_TABLE])]),
      t([readRange("README.md", configAt, 16)]),
      t([read("src/config/merge.ts")], "Checking how depth falls back before describing it."),
      t([bash('grep -c "^| " README.md')]),
      t([bash('grep -n "Configuration" README.md')]),
      t([read("README.md")], "Reading the whole README once more for the flow of the section."),
      t([bash('grep -rn "maxDepth\\|refs" src/config')]),
      done("README.md's Configuration section now has a table of all five options (depth, maxDepth, theme, cacheDir, refs) with type, default and meaning, taken from src/config/types.ts and defaults.ts."),
    ],
    [
      t([read("src/format/bytes.ts"), read("src/cli/format.ts")]),
      t([bash('grep -rn "formatBytes\\| kb\\| B\\"" src | head -30')]),
      t([edit("src/format/bytes.ts", [BYTES, BYTES + 'export function formatKb(n: number): string {\n  return (n / 1000).toFixed(1) + " kB";\n}\n'])]),
      t([write("test/format/bytes.test.ts", BYTES_TEST)]),
      t([bash("node scripts/test.mjs format")]),
      t([read("src/format/bytes.ts")], "The test says 2048 bytes must be 2.0 kB; checking the divisor."),
      t([edit("src/format/bytes.ts", ['  return (n / 1000).toFixed(1) + " kB";', '  return (n / 1024).toFixed(1) + " kB";'])]),
      t([bash("node scripts/test.mjs format")]),
      t([read("src/format/index.ts")]),
      t([edit("src/format/index.ts", [uniqueLine("src/format/index.ts"), `export { formatBytes, formatKb } from "./bytes.ts";\n${uniqueLine("src/format/index.ts")}`])]),
      t([edit("src/cli/format.ts", [uniqueLine("src/cli/format.ts"), `import { formatKb } from "../format/bytes.ts";\n${uniqueLine("src/cli/format.ts")}`])]),
      t([read("src/cli/format.ts")]),
      t([bash('grep -rn "formatKb" src test')]),
      t([bash("node scripts/build.mjs")]),
      t([bash("node scripts/test.mjs")]),
      done("Added `formatKb` (1024 bytes per kB, one decimal) in src/format/bytes.ts, exported it from src/format/index.ts and imported it in src/cli/format.ts; test/format/bytes.test.ts covers it. My first version divided by 1000 and the test caught it."),
    ],
    [
      t([read(SKILL_PATH)], "Reading the release skill first."),
      t([read("package.json"), read("CHANGELOG.md")]),
      t([bash("node scripts/typecheck.mjs")]),
      t([bash("node scripts/test.mjs")]),
      t([bash("node scripts/ci.mjs")]),
      t([bash("node scripts/bench.mjs")]),
      t([edit("package.json", ['"version": "0.3.0"', '"version": "0.4.0"'])]),
      t([edit("CHANGELOG.md", ["# Changelog\n", "# Changelog\n\n## 0.4.0\n\n- fix: total of an empty list is 0\n- fix: config merge and validation type errors\n- fix: wrapLine keeps every character of wrapped lines\n- feat: stats --json\n- feat: formatKb for the sizes the CLI prints\n- perf: splitLines is linear\n- refactor: cacheKey is now entryKey (cacheKey stays as a deprecated alias)\n- docs: every config option in the README\n"])]),
      t([read("package.json")]),
      t([bash("git status 2>&1 | head -5; ls")]),
      t([read(SKILL_PATH)], "Checking the remaining gates of the skill."),
      t([bash("node scripts/build.mjs")]),
      t([bash("node scripts/test.mjs 2>&1 | tail -4")]),
      t([readRange("CHANGELOG.md", 1, 16)]),
      done("Release 0.4.0 is prepared: version bumped in package.json, CHANGELOG.md has the 0.4.0 section, and every gate passed (type check, tests, CI, benchmark, build). Tagging and publishing are left to you, as the skill asks."),
    ],
    [
      t([read("CHANGELOG.md")]),
      t([read("src/stats/total.ts"), read("src/config/merge.ts")]),
      t([read("src/config/validate.ts")]),
      t([readRange("src/render/layout.ts", wrapAt, 8)]),
      t([read("src/cli/index.ts")]),
      t([read("src/cache/key.ts"), read("src/cache/index.ts")]),
      t([readRange("src/session/reader.ts", splitAt, 12)]),
      t([read("src/format/bytes.ts")]),
      t([read("src/store/disk.ts"), read("src/session/writer.ts")]),
      t([readRange("README.md", configAt, 16)]),
      t([bash('grep -rn "entryKey" src')]),
      t([bash("node scripts/ci.mjs 2>&1 | tail -3")]),
      t([bash("node scripts/test.mjs 2>&1 | tail -4")]),
      done(
        "## Summary\n\n- **stats**: `total([])` is 0 (the reduce started at 1).\n- **config**: `mergeConfig` falls back to the base depth instead of the string \"2\"; `validateConfig` reads `maxDepth`.\n- **render**: `wrapLine` compiles again and advances by `width - gutter`, so wrapped lines keep every character.\n- **cli**: `stats --json`; sizes use the new `formatKb` (1024 bytes per kB).\n- **cache**: `cacheKey` is now `entryKey`; `cacheKey` stays exported as a deprecated alias.\n- **session**: `splitLines` is linear; reading a 10 MB session takes about 210 ms instead of 8.4 s.\n- **docs**: README documents every config option; CHANGELOG has 0.4.0.\n\nType check, build, CI and all tests pass.",
      ),
    ],
  ];
}

export const LONG_SCRIPT: Reply[][] = buildScript();
