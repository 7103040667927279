// What the summarizer is sent of a long tool output: the lines that matter within a budget per
// call (errors, failing tests, a file's declarations, a search's paths, the head and the tail),
// in their original order, with markers that count the lines left out.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { omittedMarker, summarizerInput } from "../../../core/src/prune/summarizer-input.ts";
import { buildBatchRequest } from "../../../core/src/prune/summarizer-prompts.ts";
import { flushBatches } from "../../../core/src/prune/flush.ts";
import { emptyIndex } from "../../../core/src/prune/prune-index.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import type { Summarizer } from "../../../core/src/prune/summarizer-prompts.ts";

const BUDGET = 4000;

/** A 30 KB `npm test` log: compile lines, one type error in the middle, passing tests, two failures at the end. */
function buildLog(): { text: string; error: string; failing: string[] } {
  const lines = ["> app@1.0.0 test", "> tsc -p . && vitest run", ""];
  for (let i = 0; i < 240; i++) lines.push(`  transpiled src/modules/feature-${i}/index.ts in ${(i * 37) % 90}ms (${1000 + i * 13} bytes)`);
  const error = "src/parser/lexer.ts(212,17): error TS2322: Type 'string' is not assignable to type 'Token'.";
  lines.push(error);
  for (let i = 0; i < 220; i++) lines.push(` ✓ test/unit/case-${i}.test.ts > formats input number ${i} as expected ${i % 9}ms`);
  const failing = ["test/parser.test.ts > parser > keeps nested blocks", "test/render.test.ts > render > escapes html"];
  lines.push(` × ${failing[0]} 12ms`, "   → expected 3 to be 4", ` × ${failing[1]} 4ms`, "   → expected '<b>' to be '&lt;b&gt;'", "");
  lines.push(" Test Files  2 failed | 218 passed (220)", "      Tests  2 failed | 218 passed (220)", "   Duration  4.21s");
  const text = lines.join("\n");
  return { text, error, failing };
}

/** Lines of the result that are not markers, and the sum of the markers' counts. */
function parse(out: string): { kept: string[]; omitted: number } {
  let omitted = 0;
  const kept: string[] = [];
  for (const line of out.split("\n")) {
    const m = /^\[… (\d+) lines? …\]$/.exec(line);
    if (m) omitted += Number(m[1]);
    else kept.push(line);
  }
  return { kept, omitted };
}

describe("summarizer input", () => {
  it("a 30 KB build log keeps the error line from its middle and the failing test names from its end", () => {
    const log = buildLog();
    expect(log.text.length).toBeGreaterThan(30_000);
    const out = summarizerInput("bash", { command: "npm test" }, log.text, BUDGET);
    expect(out.length).toBeLessThanOrEqual(BUDGET);
    expect(out).toContain(log.error);
    for (const name of log.failing) expect(out).toContain(name);
    expect(out).toContain("Tests  2 failed | 218 passed (220)");
    expect(out.startsWith("> app@1.0.0 test\n> tsc -p . && vitest run")).toBe(true);
    // The error's surroundings are left out, and the marker says so.
    expect(out).toMatch(/\[… \d+ lines …\]\nsrc\/parser\/lexer\.ts\(212,17\)/);
  });

  it("keeps a few frames of a stack trace, not all of them", () => {
    const lines = ["running 1 test"];
    for (let i = 0; i < 300; i++) lines.push(`debug: step ${i} of the import finished without trouble`);
    lines.push("TypeError: Cannot read properties of undefined (reading 'id')");
    for (let i = 0; i < 40; i++) lines.push(`    at handler${i} (src/server/routes.ts:${100 + i}:${i + 3})`);
    for (let i = 0; i < 300; i++) lines.push(`debug: cleanup ${i} done`);
    const out = summarizerInput("bash", { command: "node src/server.ts" }, lines.join("\n"), BUDGET);
    expect(out).toContain("TypeError: Cannot read properties of undefined (reading 'id')");
    expect(out).toContain("at handler0 (src/server/routes.ts:100:3)");
    const frames = out.split("\n").filter((l) => /^\s+at handler/.test(l));
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.length).toBeLessThanOrEqual(3);
  });

  it("a file read keeps every exported name, each with its line number", () => {
    const lines: string[] = ['import { readFileSync } from "node:fs";', ""];
    const exported: { name: string; line: number }[] = [];
    for (let block = 0; block < 24; block++) {
      const name = `parseSection${block}`;
      lines.push(`/** Parses section ${block} of the manifest. */`);
      exported.push({ name, line: lines.length + 1 });
      lines.push(`export function ${name}(input: string, offset: number): Section${block} {`);
      for (let i = 0; i < 40; i++) lines.push(`  const value${i} = input.charCodeAt(offset + ${i}) ^ ${block * 40 + i};`);
      lines.push("  return { offset } as never;", "}", "");
    }
    exported.push({ name: "DEFAULT_SECTIONS", line: lines.length + 1 });
    lines.push("export const DEFAULT_SECTIONS = 24;");
    const text = lines.join("\n");
    expect(text.length).toBeGreaterThan(30_000);
    const out = summarizerInput("read", { path: "src/manifest.ts" }, text, BUDGET);
    expect(out.length).toBeLessThanOrEqual(BUDGET);
    for (const e of exported) expect(out).toMatch(new RegExp(`^${e.line}: export (function|const) ${e.name}\\b`, "m"));
    expect(out).not.toContain("const value20 = input.charCodeAt(offset + 20) ^ 500;");
  });

  it("a read with an offset numbers its lines from that offset", () => {
    const lines = Array.from({ length: 600 }, (_, i) => (i === 300 ? "export class Registry {" : `  step(${i});`));
    const out = summarizerInput("read", { path: "src/registry.ts", offset: 1001 }, lines.join("\n"), 1000);
    expect(out).toMatch(/^1301: export class Registry \{$/m);
    expect(out.startsWith("1001:   step(0);")).toBe(true);
  });

  it("a read of a markdown document keeps its headings", () => {
    const lines: string[] = ["# Operations guide", ""];
    for (let s = 0; s < 15; s++) lines.push(`## Step ${s}: rotate the ${s % 2 ? "signing" : "session"} keys`, ...Array.from({ length: 30 }, (_, k) => `Paragraph ${k} of step ${s} explains the reasoning in some detail.`), "");
    const out = summarizerInput("read", { path: "docs/operations.md" }, lines.join("\n"), BUDGET);
    for (let s = 0; s < 15; s++) expect(out).toContain(`## Step ${s}: rotate the`);
  });

  it("a grep keeps the path of every file it matched", () => {
    const paths = Array.from({ length: 40 }, (_, i) => `src/feature-${i}/handlers/request-${i}.ts`);
    const lines: string[] = [];
    for (const [n, path] of paths.entries()) for (let m = 0; m < 12; m++) lines.push(`${path}:${10 + m * 7}: const timeout = readTimeout(options, ${n * 12 + m}); // retry`);
    const text = lines.join("\n");
    expect(text.length).toBeGreaterThan(30_000);
    const out = summarizerInput("grep", { pattern: "readTimeout" }, text, BUDGET);
    expect(out.length).toBeLessThanOrEqual(BUDGET);
    for (const path of paths) expect(out).toContain(`${path}:`);
  });

  it("a bash search command is treated as a search", () => {
    const paths = Array.from({ length: 40 }, (_, i) => `packages/pkg-${i}/src/index.ts`);
    const lines = paths.flatMap((p) => Array.from({ length: 10 }, (_, m) => `${p}:${m + 1}:import { thing${m} } from "./thing-${m}.ts";`));
    const out = summarizerInput("bash", { command: "cd repo && rg -n import" }, lines.join("\n"), BUDGET);
    for (const p of paths) expect(out).toContain(p);
  });

  it("a linter's grouped report keeps each problem with the file it is under", () => {
    const lines: string[] = [];
    for (let f = 0; f < 120; f++) {
      lines.push(`/repo/src/ui/widget-${f}.tsx`);
      for (let p = 0; p < 3; p++) lines.push(`  ${10 + p}:${p + 3}  ${f === 77 && p === 1 ? "error" : "info"}  note number ${p} about this widget's layout  layout/rule-${p}`);
      lines.push("");
    }
    lines.push("✖ 360 problems (1 error, 0 warnings)");
    const out = summarizerInput("bash", { command: "npx eslint src" }, lines.join("\n"), BUDGET);
    expect(out).toMatch(/^\/repo\/src\/ui\/widget-77\.tsx\n(?:\[… 1 line …\]\n)? {2}11:4 {2}error {2}note number 1/m);
    expect(out).toContain("✖ 360 problems (1 error, 0 warnings)");
  });

  it("a diff keeps the name of every file it changes", () => {
    const files = Array.from({ length: 12 }, (_, i) => `src/module-${i}/service.ts`);
    const lines = files.flatMap((f, i) => [`diff --git a/${f} b/${f}`, `index 1a2b3c${i}..4d5e6f${i} 100644`, `--- a/${f}`, `+++ b/${f}`, `@@ -${i * 10 + 1},40 +${i * 10 + 1},42 @@ export class Service${i} {`, ...Array.from({ length: 40 }, (_, k) => `${k % 7 === 0 ? "+" : " "}  private field${k}: number = ${k};`)]);
    const out = summarizerInput("bash", { command: "git diff HEAD~1" }, lines.join("\n"), BUDGET);
    expect(out.length).toBeLessThanOrEqual(BUDGET);
    for (const f of files) expect(out).toContain(`diff --git a/${f} b/${f}`);
  });

  it("an output under the budget is sent unchanged", () => {
    const text = "src/a.ts(3,1): error TS1005: ';' expected.\n".repeat(50);
    expect(text.length).toBeLessThan(BUDGET);
    expect(summarizerInput("bash", { command: "tsc" }, text, BUDGET)).toBe(text);
    expect(summarizerInput("read", { path: "a.ts" }, "x".repeat(BUDGET), BUDGET)).toBe("x".repeat(BUDGET));
  });

  it("an output of a few very long lines is cut by characters, head and tail", () => {
    const text = `{"items":[${Array.from({ length: 3000 }, (_, i) => i).join(",")}]}`;
    const out = summarizerInput("bash", { command: "curl api" }, text, 1000);
    expect(out.length).toBeLessThanOrEqual(1000);
    expect(out.startsWith('{"items":[0,1,2')).toBe(true);
    expect(out.endsWith("2998,2999]}")).toBe(true);
    expect(out).toMatch(/\[… \d+ characters …\]/);
  });

  it("markers count exactly the lines left out, and the kept lines are the output's own, in order", () => {
    const log = buildLog();
    const original = log.text.split("\n");
    const out = summarizerInput("bash", { command: "npm test" }, log.text, BUDGET);
    const { kept, omitted } = parse(out);
    expect(kept.length + omitted).toBe(original.length);
    let at = 0;
    for (const line of kept) {
      const cut = line.replace(/…\(\+\d+ chars\)$/, "");
      while (at < original.length && !original[at]!.startsWith(cut)) at++;
      expect(at, `kept line ${JSON.stringify(line)} is an original line, in order`).toBeLessThan(original.length);
      at++;
    }
    expect(omittedMarker(1)).toBe("[… 1 line …]");
  });

  it("never exceeds the budget, and is the same for the same input", () => {
    // Outputs under the budget (sent whole) and over it (cut) must both occur.
    let whole = 0;
    let cut = 0;
    const line = fc.oneof(
      fc.string({ maxLength: 120 }),
      fc.constantFrom("error TS2304: Cannot find name 'x'.", " × test > fails", "export function f() {", "src/a.ts:1:2: warning: unused", "    at f (a.ts:1:2)", ""),
      fc.string({ minLength: 500, maxLength: 2000 }),
    );
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 0, maxLength: 400 }),
        fc.integer({ min: 0, max: 6000 }),
        fc.constantFrom("bash", "read", "grep", "find", "edit"),
        (lines, budget, tool) => {
          const text = lines.join("\n");
          const args = { path: "src/x.ts", command: "npm test" };
          const out = summarizerInput(tool, args, text, budget);
          expect(out.length).toBeLessThanOrEqual(Math.max(budget, 0));
          if (text.length <= budget) {
            expect(out).toBe(text);
            whole++;
          } else cut++;
          expect(summarizerInput(tool, args, text, budget)).toBe(out);
        },
      ),
      { numRuns: 300 },
    );
    expect(whole).toBeGreaterThan(20);
    expect(cut).toBeGreaterThan(20);
  });
});

describe("the summarizer's request", () => {
  it("gives each call of a batch its own budget", () => {
    const a = buildLog();
    const b = buildLog();
    const request = buildBatchRequest(
      [
        { shortRef: "t1", toolName: "bash", args: { command: "npm test" }, resultText: a.text, isError: false },
        { shortRef: "t2", toolName: "bash", args: { command: "npm test -- --run" }, resultText: b.text.replace("lexer.ts(212,17)", "scanner.ts(9,2)"), isError: true },
      ],
      BUDGET,
    );
    const sections = request.prompt.split(/^### /m).slice(1);
    expect(sections).toHaveLength(2);
    for (const s of sections) expect(s.slice(s.indexOf("Output:\n") + "Output:\n".length).trim().length).toBeLessThanOrEqual(BUDGET);
    expect(sections[0]).toContain("src/parser/lexer.ts(212,17): error TS2322");
    expect(sections[1]).toContain("src/parser/scanner.ts(9,2): error TS2322");
    expect(sections[1]).toMatch(/^t2 — bash \(failed\)/);
  });

  it("a flush sends the summarizer at most summarizerInputChars of each output", async () => {
    const prompts: string[] = [];
    const capture: Summarizer = async (request) => {
      prompts.push(request.prompt);
      return { text: "- `t1` bash npm test: a type error in src/parser/lexer.ts:212 and two failing parser/render tests" };
    };
    const log = buildLog();
    const call = { toolCallId: "call_1", toolName: "bash", args: { command: "npm test" }, resultText: log.text, isError: false, turnIndex: 1, timestamp: 1, resultTimestamp: 2 };
    const config = { ...DEFAULT_CONFIG, summarizerInputChars: 2500 };
    const result = await flushBatches([{ turnIndex: 1, calls: [call] }], emptyIndex(), config, capture);
    expect(result.outcomes[0]?.outcome).toBe("summarized");
    expect(prompts).toHaveLength(1);
    const output = prompts[0]!.slice(prompts[0]!.indexOf("Output:\n") + "Output:\n".length);
    expect(output.length).toBeLessThanOrEqual(2500);
    expect(output).toContain(log.error);
  });
});
