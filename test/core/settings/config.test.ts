import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { agentDirFrom, loadConfig, settingsPaths } from "../../../core/src/settings/settings-reader.ts";
import {
  DEFAULT_CONFIG,
  ownList,
  PRUNE_ON_MODES,
  resolveConfig,
  THINKING_LEVELS,
  validateConfig,
  type PruneConfig,
} from "../../../core/src/settings/config.ts";

describe("DEFAULT_CONFIG", () => {
  it("has the documented defaults", () => {
    expect(DEFAULT_CONFIG).toEqual({
      enabled: true,
      pruneOn: "agent-message",
      summarizerModel: "default",
      summarizerThinking: "default",
      summarizerIdleTimeoutMs: 60_000,
      summarizerTimeoutMs: 300_000,
      protectedTools: [],
      protectedPaths: ["**/skills/**/*.md"],
      protectedResendShare: 0.1,
      spillThreshold: 65_536,
      spillPreviewBytes: 1024,
      minBatchChars: 1000,
      summarizerInputChars: 2000,
      dedupByContentHash: true,
      quietOversizedSkips: false,
      autoBudgetThreshold: null,
      budgetTurnDelta: null,
      recoveryGraceTurns: 3,
      cacheAware: true,
      backgroundSummaries: false,
      chainCompression: { enabled: true, rollingWindow: 3, fuseRangeSummary: true, stripFinalAssistantThinking: true },
      purgeErrors: { enabled: true, cooldownTurns: 2, minArgChars: 500 },
      userShell: { enabled: true, minChars: 2000, afterPrompts: 3 },
      thinkingStrip: { enabled: false, keepLastTurns: 16 },
      selfControl: {
        enabled: true,
        maxActiveRewinds: 5,
        maxRewindsPerPrompt: 5,
        refuseRewindAtFraction: 0.9,
        mutationWarning: true,
        maxActiveShrinks: 32,
        shrinkStaleAfterRenders: 3,
        notifyMaxChars: 2048,
        bloatReminder: true,
        bloatThresholdBytes: 16384,
        bloatThresholdBytesByTool: { read: 24576 },
        driftNudge: true,
        driftThresholdTokens: 4000,
        driftWindowTurns: 3,
        highWaterFraction: 0.7,
        checkpointLine: true,
      },
    });
  });

  it("is deeply frozen", () => {
    expect(Object.isFrozen(DEFAULT_CONFIG)).toBe(true);
    expect(Object.isFrozen(DEFAULT_CONFIG.protectedPaths)).toBe(true);
    expect(Object.isFrozen(DEFAULT_CONFIG.chainCompression)).toBe(true);
  });

  it("zero configuration resolves to the defaults, as fresh mutable objects", () => {
    const { config, warnings } = resolveConfig(undefined, undefined);
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(warnings).toEqual([]);
    config.protectedPaths.push("x");
    config.chainCompression.rollingWindow = 9;
    expect(DEFAULT_CONFIG.protectedPaths).toEqual(["**/skills/**/*.md"]);
    expect(DEFAULT_CONFIG.chainCompression.rollingWindow).toBe(3);
  });
});

describe("resolveConfig merge", () => {
  it("project overrides global key by key", () => {
    const { config, warnings } = resolveConfig(
      { minBatchChars: 10, spillThreshold: 2000, protectedTools: ["a"] },
      { minBatchChars: 20, protectedTools: ["b"] },
    );
    expect(warnings).toEqual([]);
    expect(config.minBatchChars).toBe(20);
    expect(config.spillThreshold).toBe(2000);
    expect(config.protectedTools).toEqual(["b"]);
  });

  it("merges nested blocks deeply: a project that sets only rollingWindow keeps the rest", () => {
    const { config } = resolveConfig(
      { chainCompression: { fuseRangeSummary: false }, purgeErrors: { cooldownTurns: 5 } },
      { chainCompression: { rollingWindow: 7 } },
    );
    expect(config.chainCompression).toEqual({ enabled: true, rollingWindow: 7, fuseRangeSummary: false, stripFinalAssistantThinking: true });
    expect(config.purgeErrors).toEqual({ enabled: true, cooldownTurns: 5, minArgChars: 500 });
    expect(config.thinkingStrip).toEqual(DEFAULT_CONFIG.thinkingStrip);
  });

  it("an explicit [] for protectedPaths wins (the kill switch), in either file", () => {
    expect(resolveConfig({ protectedPaths: [] }, undefined).config.protectedPaths).toEqual([]);
    expect(resolveConfig({ protectedPaths: ["docs/**"] }, { protectedPaths: [] }).config.protectedPaths).toEqual([]);
    expect(resolveConfig({ protectedPaths: [] }, {}).config.protectedPaths).toEqual([]);
  });

  it("an invalid project value falls back to the valid global value", () => {
    const { config, warnings } = resolveConfig({ minBatchChars: 42 }, { minBatchChars: "lots" });
    expect(config.minBatchChars).toBe(42);
    expect(warnings).toEqual([
      { key: "contextPrune.minBatchChars", message: 'contextPrune.minBatchChars: expected a non-negative number, got "lots"', source: "project" },
    ]);
  });

  it("an invalid value in both falls back to the default, one warning per file", () => {
    const { config, warnings } = resolveConfig({ minBatchChars: -1 }, { minBatchChars: "lots" });
    expect(config.minBatchChars).toBe(1000);
    expect(warnings.map((w) => w.source)).toEqual(["global", "project"]);
  });
});

describe("validation", () => {
  it("a wrong type falls back to the default with exactly one warning naming the key", () => {
    const { config, warnings } = resolveConfig({ minBatchChars: "lots" }, undefined);
    expect(config.minBatchChars).toBe(1000);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].key).toBe("contextPrune.minBatchChars");
    expect(warnings[0].message).toBe('contextPrune.minBatchChars: expected a non-negative number, got "lots"');
  });

  const badValues: Array<[string, Record<string, unknown>, string]> = [
    ["enabled", { enabled: "yes" }, "contextPrune.enabled"],
    ["pruneOn", { pruneOn: "always" }, "contextPrune.pruneOn"],
    ["summarizerModel without provider", { summarizerModel: "gpt" }, "contextPrune.summarizerModel"],
    ["summarizerModel empty id", { summarizerModel: "openai/" }, "contextPrune.summarizerModel"],
    ["summarizerThinking", { summarizerThinking: "extreme" }, "contextPrune.summarizerThinking"],
    ["summarizerIdleTimeoutMs zero", { summarizerIdleTimeoutMs: 0 }, "contextPrune.summarizerIdleTimeoutMs"],
    ["summarizerTimeoutMs Infinity", { summarizerTimeoutMs: Number.POSITIVE_INFINITY }, "contextPrune.summarizerTimeoutMs"],
    ["spillThreshold negative", { spillThreshold: -5 }, "contextPrune.spillThreshold"],
    ["spillPreviewBytes fractional", { spillPreviewBytes: 1.5 }, "contextPrune.spillPreviewBytes"],
    ["minBatchChars NaN", { minBatchChars: Number.NaN }, "contextPrune.minBatchChars"],
    ["summarizerInputChars fractional", { summarizerInputChars: 4000.5 }, "contextPrune.summarizerInputChars"],
    ["autoBudgetThreshold above 1", { autoBudgetThreshold: 1.5 }, "contextPrune.autoBudgetThreshold"],
    ["autoBudgetThreshold zero", { autoBudgetThreshold: 0 }, "contextPrune.autoBudgetThreshold"],
    ["protectedResendShare above 1", { protectedResendShare: 2 }, "contextPrune.protectedResendShare"],
    ["protectedResendShare zero", { protectedResendShare: 0 }, "contextPrune.protectedResendShare"],
    ["protectedResendShare null", { protectedResendShare: null }, "contextPrune.protectedResendShare"],
    ["budgetTurnDelta string", { budgetTurnDelta: "0.1" }, "contextPrune.budgetTurnDelta"],
    ["recoveryGraceTurns negative", { recoveryGraceTurns: -1 }, "contextPrune.recoveryGraceTurns"],
    ["cacheAware a string", { cacheAware: "yes" }, "contextPrune.cacheAware"],
    ["protectedTools not an array", { protectedTools: "read" }, "contextPrune.protectedTools"],
    ["protectedPaths with a bad item", { protectedPaths: ["a/**", 5] }, "contextPrune.protectedPaths"],
    ["rollingWindow negative", { chainCompression: { rollingWindow: -1 } }, "contextPrune.chainCompression.rollingWindow"],
    ["rollingWindow fractional", { chainCompression: { rollingWindow: 2.5 } }, "contextPrune.chainCompression.rollingWindow"],
    ["purgeErrors.enabled", { purgeErrors: { enabled: 1 } }, "contextPrune.purgeErrors.enabled"],
    ["thinkingStrip.keepLastTurns string", { thinkingStrip: { keepLastTurns: "4" } }, "contextPrune.thinkingStrip.keepLastTurns"],
    ["selfControl.refuseRewindAtFraction above 1", { selfControl: { refuseRewindAtFraction: 1.5 } }, "contextPrune.selfControl.refuseRewindAtFraction"],
    ["selfControl.bloatThresholdBytesByTool with a string", { selfControl: { bloatThresholdBytesByTool: { read: "big" } } }, "contextPrune.selfControl.bloatThresholdBytesByTool"],
    ["chainCompression not an object", { chainCompression: true }, "contextPrune.chainCompression"],
  ];

  for (const [name, block, key] of badValues) {
    it(`rejects ${name} with one warning naming ${key}`, () => {
      const { config, warnings } = resolveConfig(block, undefined);
      expect(config).toEqual(DEFAULT_CONFIG);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].key).toBe(key);
      expect(warnings[0].message.startsWith(`${key}: expected `)).toBe(true);
      expect(warnings[0].source).toBe("global");
    });
  }

  it("names the bad item of a string array, and the whole array falls back", () => {
    const { config, warnings } = resolveConfig({ protectedPaths: ["docs/**"] }, { protectedPaths: ["a", null] });
    expect(config.protectedPaths).toEqual(["docs/**"]);
    expect(warnings[0].message).toBe("contextPrune.protectedPaths: expected an array of strings (item 1 is null), got an array");
  });

  it("drops a protectedPaths pattern past the glob bounds with a warning naming it, and keeps the others in order", () => {
    const tooLong = `docs/${"x".repeat(1100)}`;
    const { config, warnings } = resolveConfig({ protectedPaths: ["a/**", "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", "b/**", tooLong] }, undefined);
    expect(config.protectedPaths).toEqual(["a/**", "b/**"]);
    expect(warnings).toEqual([
      {
        key: "contextPrune.protectedPaths",
        message: 'contextPrune.protectedPaths: "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}" ignored: its braces expand to 128 patterns (at most 64)',
        source: "global",
      },
      {
        key: "contextPrune.protectedPaths",
        message: `contextPrune.protectedPaths: ${JSON.stringify(`${tooLong.slice(0, 157)}...`)} ignored: it is 1,105 characters long (at most 1,024)`,
        source: "global",
      },
    ]);
  });

  it("a refused pattern listed twice is told once; past ten refused patterns the rest are told in one warning", () => {
    const refused = Array.from({ length: 13 }, (_, i) => `r${i}/${"{a,b}".repeat(7)}`);
    const { config, warnings } = resolveConfig(undefined, { protectedPaths: [refused[0], ...refused, "docs/**"] });
    expect(config.protectedPaths).toEqual(["docs/**"]);
    expect(warnings).toHaveLength(11);
    expect(warnings.slice(0, 10).map((w) => w.message)).toEqual(
      refused.slice(0, 10).map((p) => `contextPrune.protectedPaths: ${JSON.stringify(p)} ignored: its braces expand to 128 patterns (at most 64)`),
    );
    expect(warnings[10]!.message).toBe(
      "contextPrune.protectedPaths: 3 more patterns ignored as well (too long, too many brace expansions or extglobs, or past the list's total)",
    );
  });

  it("a protectedPaths list whose every pattern is refused does not turn path protection off: the inherited list applies", () => {
    const hostile = `${"{a,b}".repeat(20)}c`;
    const fromDefault = resolveConfig(undefined, { protectedPaths: [hostile] });
    expect(fromDefault.config.protectedPaths).toEqual(["**/skills/**/*.md"]);
    expect(fromDefault.warnings.map((w) => w.message)).toEqual([
      `contextPrune.protectedPaths: ${JSON.stringify(hostile)} ignored: its braces expand to 1,048,576 patterns (at most 64)`,
      "contextPrune.protectedPaths: no pattern is left, so the inherited list applies",
    ]);
    expect(resolveConfig({ protectedPaths: ["docs/**"] }, { protectedPaths: [hostile] }).config.protectedPaths).toEqual(["docs/**"]);
    // An empty list written on purpose still turns it off.
    expect(resolveConfig(undefined, { protectedPaths: [] }).config.protectedPaths).toEqual([]);
  });

  it("bounds a whole protectedPaths list to 1,024 brace expansions: the pattern that would pass it is dropped", () => {
    // Sixteen patterns of 64 expansions each reach the bound exactly; the seventeenth is one too many.
    const wide = Array.from({ length: 17 }, (_, i) => `p${i}/${"{a,b}".repeat(6)}`);
    const { config, warnings } = resolveConfig(undefined, { protectedPaths: [...wide, "docs/**"] });
    expect(config.protectedPaths).toEqual(wide.slice(0, 16));
    expect(warnings.map((w) => w.message)).toEqual([
      `contextPrune.protectedPaths: ${JSON.stringify(wide[16])} ignored: with it the list's patterns would expand to more than 1,024 in all`,
      `contextPrune.protectedPaths: "docs/**" ignored: with it the list's patterns would expand to more than 1,024 in all`,
    ]);
  });

  it("clamps thinkingStrip.keepLastTurns to at least 1, with a warning", () => {
    const { config, warnings } = resolveConfig({ thinkingStrip: { keepLastTurns: 0 } }, undefined);
    expect(config.thinkingStrip.keepLastTurns).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].key).toBe("contextPrune.thinkingStrip.keepLastTurns");
  });

  it("raises summarizerInputChars to at least 500, with a warning", () => {
    const { config, warnings } = resolveConfig({ summarizerInputChars: 100 }, { summarizerInputChars: 12_000 });
    expect(config.summarizerInputChars).toBe(12_000);
    expect(resolveConfig({ summarizerInputChars: 100 }, undefined).config.summarizerInputChars).toBe(500);
    expect(warnings.map((w) => w.message)).toEqual(["contextPrune.summarizerInputChars: 100 raised to the minimum 500"]);
  });

  it("accepts valid edge values", () => {
    const { config, warnings } = resolveConfig(
      {
        enabled: false,
        pruneOn: "on-demand",
        summarizerModel: "openrouter/anthropic/claude-sonnet",
        summarizerThinking: "max",
        minBatchChars: 0,
        autoBudgetThreshold: 1,
        budgetTurnDelta: 0.05,
        recoveryGraceTurns: 0,
        protectedResendShare: 1,
        chainCompression: { rollingWindow: 0 },
        thinkingStrip: { enabled: true, keepLastTurns: 1 },
      },
      undefined,
    );
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({
      enabled: false,
      pruneOn: "on-demand",
      summarizerModel: "openrouter/anthropic/claude-sonnet",
      summarizerThinking: "max",
      minBatchChars: 0,
      autoBudgetThreshold: 1,
      budgetTurnDelta: 0.05,
      recoveryGraceTurns: 0,
      protectedResendShare: 1,
      chainCompression: { rollingWindow: 0 },
      thinkingStrip: { enabled: true, keepLastTurns: 1 },
    });
  });

  it("null switches a budget back off", () => {
    expect(resolveConfig({ autoBudgetThreshold: 0.8 }, { autoBudgetThreshold: null }).config.autoBudgetThreshold).toBeNull();
  });

  it("ignores unknown keys silently", () => {
    const { config, warnings } = resolveConfig({ someFutureKey: 1, chainCompression: { alsoUnknown: true } }, undefined);
    expect(warnings).toEqual([]);
    expect(config).toEqual(DEFAULT_CONFIG);
  });

  it("a non-object block gives one warning and the defaults", () => {
    for (const block of [5, "on", true, [1, 2]]) {
      const { config, warnings } = resolveConfig(block, undefined);
      expect(config).toEqual(DEFAULT_CONFIG);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].key).toBe("contextPrune");
    }
  });

  it("a non-object project block still lets the global block apply", () => {
    const { config, warnings } = resolveConfig({ minBatchChars: 5 }, "nope");
    expect(config.minBatchChars).toBe(5);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].source).toBe("project");
  });

  it("validateConfig returns only the valid keys it was given", () => {
    const { config, warnings } = validateConfig({ minBatchChars: 3, spillThreshold: "x", chainCompression: { enabled: false } }, "cli");
    expect(config).toEqual({ minBatchChars: 3, chainCompression: { enabled: false } });
    expect(warnings).toHaveLength(1);
    expect(warnings[0].source).toBe("cli");
  });

  it("does not read inherited keys", () => {
    const block: Record<string, unknown> = Object.create({ minBatchChars: "inherited" });
    expect(resolveConfig(block, undefined).warnings).toEqual([]);
    const polluted = JSON.parse('{"__proto__": {"minBatchChars": 1}}');
    expect(resolveConfig(polluted, undefined).config.minBatchChars).toBe(1000);
  });
});

function assertWellTyped(config: PruneConfig): void {
  const isNonNegative = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  const isFractionOrNull = (n: unknown) => n === null || (typeof n === "number" && n > 0 && n <= 1);
  expect(typeof config.enabled).toBe("boolean");
  expect(PRUNE_ON_MODES).toContain(config.pruneOn);
  expect(typeof config.summarizerModel).toBe("string");
  expect(THINKING_LEVELS).toContain(config.summarizerThinking);
  for (const n of [config.summarizerIdleTimeoutMs, config.summarizerTimeoutMs, config.spillThreshold]) expect(n > 0 && isNonNegative(n)).toBe(true);
  for (const n of [config.spillPreviewBytes, config.minBatchChars, config.recoveryGraceTurns]) expect(isNonNegative(n)).toBe(true);
  expect(isFractionOrNull(config.autoBudgetThreshold)).toBe(true);
  expect(isFractionOrNull(config.budgetTurnDelta)).toBe(true);
  for (const list of [config.protectedTools, config.protectedPaths]) {
    expect(Array.isArray(list)).toBe(true);
    expect(list.every((item) => typeof item === "string")).toBe(true);
  }
  expect(Number.isInteger(config.chainCompression.rollingWindow) && config.chainCompression.rollingWindow >= 0).toBe(true);
  expect(typeof config.chainCompression.enabled).toBe("boolean");
  expect(typeof config.chainCompression.fuseRangeSummary).toBe("boolean");
  expect(typeof config.chainCompression.stripFinalAssistantThinking).toBe("boolean");
  expect(typeof config.purgeErrors.enabled).toBe("boolean");
  expect(Number.isInteger(config.purgeErrors.cooldownTurns) && config.purgeErrors.cooldownTurns >= 0).toBe(true);
  expect(isNonNegative(config.purgeErrors.minArgChars)).toBe(true);
  expect(typeof config.thinkingStrip.enabled).toBe("boolean");
  expect(Number.isInteger(config.thinkingStrip.keepLastTurns) && config.thinkingStrip.keepLastTurns >= 1).toBe(true);
}

describe("ownList", () => {
  it("is the list a block sets itself under the key, when it is a list of strings", () => {
    expect(ownList({ protectedPaths: ["a/**", "b"] }, "protectedPaths")).toEqual(["a/**", "b"]);
    expect(ownList({ protectedTools: [] }, "protectedTools")).toEqual([]);
  });

  it("is undefined for a block that sets none, or something else, and for what is no block", () => {
    expect(ownList({ protectedTools: ["bash"] }, "protectedPaths")).toBeUndefined();
    expect(ownList({ protectedPaths: ["a", 1] }, "protectedPaths")).toBeUndefined();
    expect(ownList({ protectedPaths: "a/**" }, "protectedPaths")).toBeUndefined();
    expect(ownList(Object.create({ protectedPaths: ["inherited"] }), "protectedPaths")).toBeUndefined();
    for (const block of [undefined, null, ["a"], "a"]) expect(ownList(block, "protectedPaths")).toBeUndefined();
  });
});

describe("resolveConfig property", () => {
  const knownKeys = Object.keys(DEFAULT_CONFIG);
  const anyValue = fc.jsonValue();
  // Blocks that use the real keys (with arbitrary values, nested ones included) reach the
  // validators far more often than arbitrary JSON alone would.
  const blockWithKnownKeys = fc.dictionary(
    fc.constantFrom(...knownKeys),
    fc.oneof(anyValue, fc.dictionary(fc.constantFrom("enabled", "rollingWindow", "fuseRangeSummary", "cooldownTurns", "minArgChars", "keepLastTurns", "x"), anyValue)),
  );
  const block = fc.oneof(anyValue, blockWithKnownKeys, fc.constant(undefined));

  it("never throws and always gives a well-typed config", () => {
    fc.assert(
      fc.property(block, block, (globalBlock, projectBlock) => {
        const { config, warnings } = resolveConfig(globalBlock, projectBlock);
        assertWellTyped(config);
        for (const warning of warnings) {
          expect(warning.message.startsWith(`${warning.key}: `)).toBe(true);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe("settings locations", () => {
  it("agentDirFrom prefers PI_CODING_AGENT_DIR and expands ~", () => {
    expect(agentDirFrom({ PI_CODING_AGENT_DIR: "/opt/pi" })).toBe("/opt/pi");
    expect(agentDirFrom({ PI_CODING_AGENT_DIR: "~/custom/pi" })).toBe(join(homedir(), "custom/pi"));
    expect(agentDirFrom({ PI_CODING_AGENT_DIR: "~" })).toBe(homedir());
    expect(agentDirFrom({})).toBe(join(homedir(), ".pi", "agent"));
    expect(agentDirFrom({ PI_CODING_AGENT_DIR: "" })).toBe(join(homedir(), ".pi", "agent"));
  });

  it("settingsPaths", () => {
    expect(settingsPaths({ agentDir: "/a", cwd: "/w" })).toEqual({ global: join("/a", "settings.json"), project: join("/w", ".pi", "settings.json") });
  });
});

describe("loadConfig", () => {
  let root: string;
  let agentDir: string;
  let cwd: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "pruner-config-"));
    agentDir = join(root, "agent");
    cwd = join(root, "project");
    mkdirSync(agentDir, { recursive: true });
    mkdirSync(join(cwd, ".pi"), { recursive: true });
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it("works with no files at all", () => {
    const loaded = loadConfig({ agentDir: join(root, "missing"), cwd: join(root, "nowhere"), projectTrusted: true });
    expect(loaded.config).toEqual(DEFAULT_CONFIG);
    expect(loaded.warnings).toEqual([]);
    expect(loaded.global.exists).toBe(false);
    expect(loaded.project.exists).toBe(false);
    expect(loaded.globalBlock).toBeUndefined();
  });

  it("reads JSONC (comments, trailing commas, a BOM) from both files and merges them", () => {
    writeFileSync(
      join(agentDir, "settings.json"),
      `\uFEFF{
  // global settings
  "theme": "dark",
  "contextPrune": {
    /* smaller batches */
    "minBatchChars": 200,
    "chainCompression": { "fuseRangeSummary": false, },
  },
}
`,
    );
    writeFileSync(join(cwd, ".pi", "settings.json"), `{ "contextPrune": { "chainCompression": { "rollingWindow": 5 } } // project\n}`);
    const loaded = loadConfig({ agentDir, cwd, projectTrusted: true });
    expect(loaded.warnings).toEqual([]);
    expect(loaded.global).toEqual({ path: join(agentDir, "settings.json"), exists: true });
    expect(loaded.config.minBatchChars).toBe(200);
    expect(loaded.config.chainCompression).toEqual({ enabled: true, rollingWindow: 5, fuseRangeSummary: false, stripFinalAssistantThinking: true });
    expect(loaded.globalBlock).toEqual({ minBatchChars: 200, chainCompression: { fuseRangeSummary: false } });
    expect(loaded.projectBlock).toEqual({ chainCompression: { rollingWindow: 5 } });
  });

  it("an unparsable file is reported once, treated as empty, and never modified", () => {
    const broken = `{ "contextPrune": { "minBatchChars": 5 } "oops" }`;
    const projectFile = join(cwd, ".pi", "settings.json");
    writeFileSync(projectFile, broken);
    writeFileSync(join(agentDir, "settings.json"), `{ "contextPrune": { "spillThreshold": 100 } }`);
    const loaded = loadConfig({ agentDir, cwd, projectTrusted: true });
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.warnings[0].source).toBe("project");
    expect(loaded.warnings[0].message).toContain(projectFile);
    expect(loaded.warnings[0].message).toContain("not valid JSON");
    expect(loaded.project.exists).toBe(true);
    expect(loaded.project.error).toMatch(/line 1, column/);
    expect(loaded.config.minBatchChars).toBe(1000);
    expect(loaded.config.spillThreshold).toBe(100);
    expect(loaded.projectBlock).toBeUndefined();
  });

  it("a file whose root is not an object is reported once", () => {
    writeFileSync(join(agentDir, "settings.json"), `["contextPrune"]`);
    const loaded = loadConfig({ agentDir, cwd, projectTrusted: true });
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.global.error).toContain("JSON object");
  });

  it("an unreadable file is reported once", () => {
    mkdirSync(join(agentDir, "settings.json"));
    const loaded = loadConfig({ agentDir, cwd, projectTrusted: true });
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.global.error).toContain("cannot read");
    expect(loaded.config).toEqual(DEFAULT_CONFIG);
  });

  it.skipIf(process.getuid?.() === 0)("an unreadable-by-permission file is reported once", () => {
    const file = join(agentDir, "settings.json");
    writeFileSync(file, "{}");
    chmodSync(file, 0o000);
    const loaded = loadConfig({ agentDir, cwd, projectTrusted: true });
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.global.error).toContain("EACCES");
  });

  it("validation warnings carry their source", () => {
    writeFileSync(join(cwd, ".pi", "settings.json"), `{ "contextPrune": { "minBatchChars": "lots" } }`);
    const loaded = loadConfig({ agentDir, cwd, projectTrusted: true });
    expect(loaded.warnings).toEqual([
      { key: "contextPrune.minBatchChars", message: 'contextPrune.minBatchChars: expected a non-negative number, got "lots"', source: "project" },
    ]);
  });
});
