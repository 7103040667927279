// docs/benchmarks.md is assembled from the suites' own sections, whose prose lives in markdown
// templates beside them (bench/suites/*-report.md); the cache prices and limits the page states
// are core's.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseTemplate } from "../../bench/lib/report-template.ts";
import { renderMarkdown } from "../../bench/lib/report.ts";
import type { ReportSection } from "../../bench/lib/report-doc.ts";
import type { BenchResults } from "../../bench/lib/results.ts";
import { editorReport } from "../../bench/suites/editor-report.ts";
import { factsReport } from "../../bench/suites/facts-report.ts";
import { globReport } from "../../bench/suites/glob-report.ts";
import { hostReport } from "../../bench/suites/host-report.ts";
import { loadReport } from "../../bench/suites/load-report.ts";
import { renderReport } from "../../bench/suites/render-report.ts";
import { replayReport } from "../../bench/suites/replay-report.ts";
import { ANTHROPIC_LOOKBACK_BLOCKS, PRICE_MODELS } from "../../core/src/cost/price-rules.ts";

const committed = JSON.parse(readFileSync(new URL("../../bench/results.json", import.meta.url), "utf8")) as BenchResults;

const TITLES = ["## 1. Render latency", "## 2. Session load", "## 3. Cost replay", "## 4. Glob matching", "## 5. Host overhead", "## 6. Editor", "## 7. What the agent keeps"];

describe("a report template", () => {
  const template = parseTemplate(
    [
      "A comment for the reader, not a block.",
      "<!-- block: first -->",
      "",
      "Hello {{name}}, and {{name}} again.",
      "",
      "| a | {{value}} |",
      "",
      "<!-- block: plain -->",
      "No placeholder.",
      "",
    ].join("\n"),
  );

  it("fills every occurrence of a placeholder and drops the blank lines around the block, keeping those inside it", () => {
    expect(template.block("first", { name: "Pi", value: "1" })).toBe("Hello Pi, and Pi again.\n\n| a | 1 |");
    expect(template.block("plain")).toBe("No placeholder.");
  });

  it("leaves a value's own braces as they are", () => {
    expect(template.block("first", { name: "{{value}}", value: "$&" })).toBe("Hello {{value}}, and {{value}} again.\n\n| a | $& |");
  });

  it("refuses a placeholder without a value, a value without a placeholder, and a block it does not have", () => {
    expect(() => template.block("first", { name: "Pi" })).toThrow(/needs a value for \{\{value\}\}/);
    expect(() => template.block("plain", { name: "Pi" })).toThrow(/has no \{\{name\}\}/);
    expect(() => template.block("missing")).toThrow(/no block "missing"/);
  });

  it("refuses a block named twice", () => {
    expect(() => parseTemplate("<!-- block: a -->\nx\n<!-- block: a -->\ny\n")).toThrow(/block "a" appears twice/);
  });
});

describe("docs/benchmarks.md", () => {
  it("has its seven sections in order, each saying it did not run when its suite did not", () => {
    const page = renderMarkdown({ ...committed, figures: {}, suites: {} });
    const at = TITLES.map((title) => page.split("\n").indexOf(title));
    expect(at.every((line) => line >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    for (const title of TITLES) expect(page).toContain(`${title}\n\nNot run.\n`);
  });

  it("made from the committed results, has every section once and no placeholder or template marker left", () => {
    const page = renderMarkdown(committed);
    for (const title of TITLES) expect(page.split("\n").filter((line) => line === title)).toHaveLength(1);
    expect(page).not.toMatch(/\{\{\w+\}\}/);
    expect(page).not.toContain("<!-- block:");
    expect(page).not.toContain("undefined");
  });

  it("names the model each price model emulates with its registry prices, and states core's multiples, minimum and lookback", () => {
    const page = renderMarkdown(committed);
    const models = page.split("\n").find((line) => line.startsWith("How it runs: "))!;
    const { anthropic, openai, simple } = PRICE_MODELS;
    expect(models).toContain("which emulate claude-sonnet-4-6 with its prices from Pi's model registry ($3 in, $15 out, $0.3 cache read, $3.75 cache write per million tokens)");
    expect(models).toContain(`the ${ANTHROPIC_LOOKBACK_BLOCKS}-block lookback, writes at ${anthropic.write}×, reads at ${anthropic.read}×, output at ${anthropic.output}×, the ${anthropic.minCachedTokens.toLocaleString("en-US")}-token minimum, thinking of earlier turns kept`);
    expect(models).toContain("which emulate gpt-5 ($1.25 in, $10 out, $0.125 cache read per million tokens)");
    expect(models).toContain(`in 128-token steps from ${openai.minCachedTokens.toLocaleString("en-US")}, reads at ${openai.read}×, no write premium, output at ${openai.output}×`);
    expect(models).toContain(`read at ${simple.read}×, the rest written at ${simple.write}×`);
    expect(models).toContain(`their input is priced uncached at ${anthropic.uncached}×`);
  });
});

describe.each([
  ["render", renderReport],
  ["load", loadReport],
  ["replay", replayReport],
  ["glob", globReport],
  ["host", hostReport],
  ["editor", editorReport],
  ["facts", factsReport],
] as [string, ReportSection][])("the %s suite's section", (name, section) => {
  it("puts only the suite's own figures in the headline", () => {
    for (const mode of ["full", "quick"] as const) {
      const rows = section.headline?.({ ...committed, mode }) ?? [];
      expect(rows.length).toBeGreaterThan(0);
      for (const [figure] of rows) expect(figure.startsWith(`${name}.`), figure).toBe(true);
    }
  });
});
