// The settings a session records for its render: only what the render reads, written again only
// when it changes, read back through the settings validator.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG, mergeConfigLayers } from "../../../core/src/settings/config.ts";
import { PRUNE_SETTINGS } from "../../../core/src/shapes/entries.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { buildSessionView } from "../../../core/src/view/session-view.ts";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { RESENDS_PROTECTED, configOfRecord, foreignWriterDefaults, recordedConfig, settingsToRecord, WRITER_DEFAULTS, writerDefaultsOf } from "../../../core/src/view/recorded-settings.ts";

const appendEntry = (b: SessionBuilder, entry: ReturnType<typeof settingsToRecord>) => {
  if (entry?.kind === "custom") b.custom(entry.customType, entry.data);
};

describe("recordedConfig", () => {
  it("holds every key the render reads and nothing the render does not", () => {
    expect(recordedConfig(DEFAULT_CONFIG)).toEqual({
      enabled: true,
      protectedTools: [],
      protectedPaths: ["**/skills/**/*.md"],
      recoveryGraceTurns: 3,
      protectedResendShare: 0.1,
      cacheAware: true,
      chainCompression: { enabled: true, stripFinalAssistantThinking: true },
      purgeErrors: { enabled: true, cooldownTurns: 2, minArgChars: 500 },
      userShell: { enabled: true, minChars: 2000, afterPrompts: 3 },
      thinkingStrip: { enabled: false, keepLastTurns: 16 },
      selfControl: { enabled: true },
      // Not a setting: this writer sends protected output again after Pi's compaction.
      [RESENDS_PROTECTED]: true,
    });
    expect(JSON.stringify(recordedConfig(DEFAULT_CONFIG)).length).toBeLessThan(500);
  });
});

describe("settingsToRecord", () => {
  it("records the settings when the branch has none, not again while they stay, and again when they change or the version does", () => {
    const b = new SessionBuilder().user("hi");
    const first = settingsToRecord(b.entries, "0.1.0", DEFAULT_CONFIG);
    expect(first).toEqual({ kind: "custom", customType: PRUNE_SETTINGS, data: { version: "0.1.0", config: recordedConfig(DEFAULT_CONFIG) } });
    appendEntry(b, first);
    b.assistant("hello");
    expect(settingsToRecord(b.entries, "0.1.0", DEFAULT_CONFIG)).toBeUndefined();
    // A setting the render does not read changes nothing it records.
    expect(settingsToRecord(b.entries, "0.1.0", mergeConfigLayers(DEFAULT_CONFIG, { minBatchChars: 5 }))).toBeUndefined();
    const protectedMore = mergeConfigLayers(DEFAULT_CONFIG, { protectedPaths: ["docs/**"] });
    const second = settingsToRecord(b.entries, "0.1.0", protectedMore);
    expect(second?.kind === "custom" && (second.data as { config: { protectedPaths: string[] } }).config.protectedPaths).toEqual(["docs/**"]);
    appendEntry(b, second);
    expect(settingsToRecord(b.entries, "0.1.0", protectedMore)).toBeUndefined();
    expect(settingsToRecord(b.entries, "0.2.0", protectedMore)).toBeDefined();
    // A branch that leaves before the change holds only the first record: the newest on the branch counts.
    expect(settingsToRecord(b.entries.slice(0, 2), "0.1.0", DEFAULT_CONFIG)).toBeUndefined();
    expect(settingsToRecord(b.entries.slice(0, 2), "0.1.0", protectedMore)).toBeDefined();
  });
});

describe("configOfRecord", () => {
  it("reads a record back through the validator: a value it cannot use falls back to the writer version's default and is named", () => {
    const { config, problems } = configOfRecord({ version: "0.1.0", config: { ...recordedConfig(DEFAULT_CONFIG), enabled: "yes", protectedTools: ["bash"] } });
    expect(config.enabled).toBe(true);
    expect(config.protectedTools).toEqual(["bash"]);
    expect(problems).toEqual([expect.stringContaining("contextPrune.enabled")]);
    expect(configOfRecord({}).config).toEqual(DEFAULT_CONFIG);
  });

  it("a record written before the shell-output setting, and a pi-condense session, are shown with the person's shell output raw, as they sent it", () => {
    const { userShell: _new, ...older } = recordedConfig(DEFAULT_CONFIG);
    expect(configOfRecord({ version: "0.1.0", config: older }).config.userShell.enabled).toBe(false);
    expect(configOfRecord({ version: "0.1.0", config: recordedConfig(DEFAULT_CONFIG) }).config.userShell.enabled).toBe(true);
    expect(foreignWriterDefaults({ writers: [{ name: "pi-condense" }] } as unknown as Parameters<typeof foreignWriterDefaults>[0])?.config.userShell.enabled).toBe(false);
  });

  it("the defaults listed for the package's current version are today's defaults (a changed default needs a new version)", () => {
    const { version } = JSON.parse(readFileSync(new URL("../../../pi-extension/package.json", import.meta.url), "utf8")) as { version: string };
    const { [RESENDS_PROTECTED]: marker, ...settings } = recordedConfig(DEFAULT_CONFIG);
    expect(marker).toBe(true);
    expect(WRITER_DEFAULTS[version]).toEqual(settings);
    expect(writerDefaultsOf(version)).toEqual(DEFAULT_CONFIG);
    expect(writerDefaultsOf("0.0.0-unknown")).toBeUndefined();
  });
});

describe("the record in a session view", () => {
  it("changes nothing the session view shows: no problem, no call, the same totals", () => {
    const without = prunedSessionBuilder();
    const withRecord = prunedSessionBuilder();
    withRecord.custom(PRUNE_SETTINGS, { version: "0.1.0", config: recordedConfig(DEFAULT_CONFIG) });
    withRecord.assistant("same as before");
    without.assistant("same as before");
    const view = (b: SessionBuilder) => {
      const v = buildSessionView(parseSessionText(b.toJsonl()), { config: DEFAULT_CONFIG });
      return { problems: v.problems, calls: v.calls.map((c) => [c.toolCallId, c.state]), summaries: v.summaries.length, totals: v.totals };
    };
    expect(view(withRecord)).toEqual(view(without));
  });
});
