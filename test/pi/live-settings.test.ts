// The check before each request of whether the settings files changed, on real files in a temp
// folder: nothing changed says so from two stats, an edit gives the new settings, a file that
// turned unparsable or a value the validator refuses keeps the settings in use (and is not read
// again until it changes).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changedSettings, loadPrunerSettings } from "../../pi-extension/src/settings.ts";

let root: string;
let agentDir: string;
let cwd: string;
const write = (file: string, value: unknown) => writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
const globalFile = () => join(agentDir, "settings.json");
const projectFile = () => join(cwd, ".pi", "settings.json");

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "live-settings-"));
  agentDir = join(root, "agent");
  cwd = join(root, "project");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(join(cwd, ".pi"), { recursive: true });
  vi.stubEnv("PI_CODING_AGENT_DIR", agentDir);
  write(globalFile(), { contextPrune: { minBatchChars: 900 } });
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(root, { recursive: true, force: true });
});

describe("settings files checked before a request", () => {
  it("unchanged files are no change", () => {
    const loaded = loadPrunerSettings(cwd, true);
    expect(changedSettings(loaded, cwd, true)).toBeUndefined();
    expect(changedSettings(loaded, cwd, true)).toBeUndefined();
  });

  it("a project file that appears, and a global file rewritten, give the new settings", () => {
    const loaded = loadPrunerSettings(cwd, true);
    write(projectFile(), { contextPrune: { protectedPaths: ["**/guide.md"] } });
    const added = changedSettings(loaded, cwd, true);
    expect(added?.kind).toBe("changed");
    expect(added!.settings.config.protectedPaths).toEqual(["**/guide.md"]);
    expect(added!.settings.projectHasBlock).toBe(true);
    expect(changedSettings(added!.settings, cwd, true)).toBeUndefined();

    write(globalFile(), { contextPrune: { minBatchChars: 1200 } });
    const edited = changedSettings(added!.settings, cwd, true);
    expect(edited?.kind).toBe("changed");
    expect(edited!.settings.config).toMatchObject({ minBatchChars: 1200, protectedPaths: ["**/guide.md"] });
  });

  it("an untrusted project's file is neither read nor watched", () => {
    const loaded = loadPrunerSettings(cwd, false);
    write(projectFile(), { contextPrune: { protectedPaths: ["**/guide.md"] } });
    expect(changedSettings(loaded, cwd, false)).toBeUndefined();
    expect(loaded.config.protectedPaths).toEqual(["**/skills/**/*.md"]);
  });

  it("a file that turned unparsable keeps the settings in use, names the file, and is checked again only when it changes", () => {
    write(projectFile(), { contextPrune: { protectedPaths: ["**/guide.md"] } });
    const loaded = loadPrunerSettings(cwd, true);
    write(projectFile(), '{ "contextPrune": { "protectedPaths": [');
    const broken = changedSettings(loaded, cwd, true);
    expect(broken?.kind).toBe("refused");
    if (broken?.kind !== "refused") throw new Error("unreachable");
    expect(broken.problems).toEqual([expect.stringMatching(new RegExp(`^${projectFile().replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}: not valid JSON \\(`))]);
    expect(broken.settings.config.protectedPaths).toEqual(["**/guide.md"]);
    expect(broken.settings.config.minBatchChars).toBe(900);
    expect(changedSettings(broken.settings, cwd, true)).toBeUndefined();

    // Fixed: the file's new settings apply.
    write(projectFile(), { contextPrune: { protectedPaths: ["docs/**"] } });
    const fixed = changedSettings(broken.settings, cwd, true);
    expect(fixed?.kind).toBe("changed");
    expect(fixed!.settings.config.protectedPaths).toEqual(["docs/**"]);
  });

  it("a new invalid value refuses the whole change, the valid parts with it; a warning the settings in use had already does not", () => {
    write(globalFile(), { contextPrune: { minBatchChars: 900, pruneOn: "sometimes" } });
    const loaded = loadPrunerSettings(cwd, true);
    expect(loaded.warnings.map((w) => w.key)).toEqual(["contextPrune.pruneOn"]);
    write(globalFile(), { contextPrune: { minBatchChars: 900, pruneOn: "sometimes", protectedPaths: ["**/guide.md"], recoveryGraceTurns: "soon" } });
    const refused = changedSettings(loaded, cwd, true);
    expect(refused?.kind).toBe("refused");
    if (refused?.kind !== "refused") throw new Error("unreachable");
    expect(refused.problems).toEqual([expect.stringMatching(/^contextPrune\.recoveryGraceTurns: expected /)]);
    expect(refused.settings.config.protectedPaths).toEqual(["**/skills/**/*.md"]);

    write(globalFile(), { contextPrune: { minBatchChars: 900, pruneOn: "sometimes", protectedPaths: ["**/guide.md"] } });
    const applied = changedSettings(refused.settings, cwd, true);
    expect(applied?.kind).toBe("changed");
    expect(applied!.settings.config.protectedPaths).toEqual(["**/guide.md"]);
  });

  it("a file already unparsable when the settings were read does not hold back a change to the other", () => {
    write(projectFile(), "{ broken");
    const loaded = loadPrunerSettings(cwd, true);
    expect(loaded.unreadable.map((f) => f.path)).toEqual([projectFile()]);
    write(globalFile(), { contextPrune: { minBatchChars: 1500 } });
    const change = changedSettings(loaded, cwd, true);
    expect(change?.kind).toBe("changed");
    expect(change!.settings.config.minBatchChars).toBe(1500);
  });
});
