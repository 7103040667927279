// The check before each request of whether the settings files changed, on real files in a temp
// folder: nothing changed says so from two stats, an edit gives the new settings, a file that
// turned unparsable or a value the validator refuses keeps the settings in use (and is not read
// again until it changes).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changedSettings, loadPrunerSettings, SettingsWatch } from "../../pi-extension/src/settings.ts";

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

  it("a file caught empty (a save between its truncate and its write) keeps the settings in use, and the next look takes what the save wrote", () => {
    write(projectFile(), { contextPrune: { protectedTools: ["bash"] } });
    const loaded = loadPrunerSettings(cwd, true);
    write(projectFile(), "");
    const caught = changedSettings(loaded, cwd, true);
    expect(caught?.kind).toBe("held");
    expect(caught!.settings.config.protectedTools).toEqual(["bash"]);
    expect(caught!.settings.config.minBatchChars).toBe(900);
    // The save's write lands: the next look applies it.
    write(projectFile(), { contextPrune: { protectedTools: ["bash", "read"] } });
    const saved = changedSettings(caught!.settings, cwd, true);
    expect(saved?.kind).toBe("changed");
    expect(saved!.settings.config.protectedTools).toEqual(["bash", "read"]);
  });

  it("a file emptied for good applies as no settings (as Pi reads it) once a second look finds it unchanged", () => {
    write(projectFile(), { contextPrune: { protectedTools: ["bash"] } });
    const loaded = loadPrunerSettings(cwd, true);
    write(projectFile(), "  \n");
    const caught = changedSettings(loaded, cwd, true);
    expect(caught?.kind).toBe("held");
    const settled = changedSettings(caught!.settings, cwd, true);
    expect(settled?.kind).toBe("changed");
    expect(settled!.settings.config.protectedTools).toEqual([]);
    expect(settled!.settings.config.minBatchChars).toBe(900);
    expect(changedSettings(settled!.settings, cwd, true)).toBeUndefined();
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

describe("which requests look at the settings files", () => {
  let watches: SettingsWatch[] = [];
  const followed = (trusted = true) => {
    const watch = new SettingsWatch();
    watches.push(watch);
    const loaded = loadPrunerSettings(cwd, trusted);
    watch.follow(loaded, trusted, true);
    return { watch, loaded };
  };
  /** Polls until the watch says a look is due (events arrive through the event loop), or gives up after 5 s. */
  const dueWithin = async (watch: SettingsWatch, trusted = true) => {
    for (let waited = 0; waited < 5_000; waited += 10) {
      if (watch.due(trusted)) return true;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return false;
  };
  /** Several turns of the event loop with no look due: what an event would have made due by then. */
  const stillQuiet = async (watch: SettingsWatch, trusted = true) => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    return !watch.due(trusted);
  };
  afterEach(() => {
    for (const watch of watches) watch.close();
    watches = [];
  });

  it("the first request after a read looks once (a save between the read and the watch is not lost); then none until a file changes", async () => {
    const { watch } = followed();
    expect(watch.due(true)).toBe(true);
    expect(watch.due(true)).toBe(false);
    expect(await stillQuiet(watch)).toBe(true);
  });

  it("an edit of the global file makes the next request look, and the look finds the new settings", async () => {
    const { watch, loaded } = followed();
    watch.due(true);
    write(globalFile(), { contextPrune: { minBatchChars: 1300 } });
    expect(await dueWithin(watch)).toBe(true);
    expect(changedSettings(loaded, cwd, true)?.settings.config.minBatchChars).toBe(1300);
    expect(watch.due(true)).toBe(false);
  });

  it("other files in the agent folder do not make a request look; the project's .pi folder counts whatever changes in it", async () => {
    const { watch } = followed();
    watch.due(true);
    write(join(agentDir, "auth.json"), {});
    expect(await stillQuiet(watch)).toBe(true);
    write(join(cwd, ".pi", "notes.txt"), "x");
    expect(await dueWithin(watch)).toBe(true);
  });

  it("a project without .pi: its appearing makes a request look, and the settings written into it are watched from then on", async () => {
    rmSync(join(cwd, ".pi"), { recursive: true });
    const { watch, loaded } = followed();
    watch.due(true);
    write(join(cwd, "unrelated.txt"), "x");
    expect(await stillQuiet(watch)).toBe(true);
    mkdirSync(join(cwd, ".pi"));
    expect(await dueWithin(watch)).toBe(true);
    expect(changedSettings(loaded, cwd, true)).toBeUndefined();
    // After that look the runtime follows again: .pi is watched now, and the next request looks once more.
    watch.follow(loaded, true, false);
    expect(watch.due(true)).toBe(true);
    write(projectFile(), { contextPrune: { protectedPaths: ["**/guide.md"] } });
    expect(await dueWithin(watch)).toBe(true);
    expect(changedSettings(loaded, cwd, true)?.settings.config.protectedPaths).toEqual(["**/guide.md"]);
  });

  for (const which of ["the project's .pi", "the agent"] as const) {
    const folder = () => (which === "the agent" ? agentDir : join(cwd, ".pi"));
    const file = () => (which === "the agent" ? globalFile() : projectFile());

    it(`${which} folder deleted and made again after a look: a settings file written into the new folder makes the next request look`, async () => {
      const { watch, loaded } = followed();
      watch.due(true);
      rmSync(folder(), { recursive: true });
      mkdirSync(folder());
      expect(await dueWithin(watch)).toBe(true);
      const looked = changedSettings(loaded, cwd, true);
      const inUse = looked?.settings ?? loaded;
      // The look after the event: the runtime follows again, and the watch moves to the new folder.
      watch.follow(inUse, true, looked !== undefined);
      watch.due(true);
      write(file(), { contextPrune: { protectedTools: ["bash"] } });
      expect(await dueWithin(watch)).toBe(true);
      expect(changedSettings(inUse, cwd, true)?.settings.config.protectedTools).toEqual(["bash"]);
    });
  }

  it("the project's .pi replaced by a link to a folder elsewhere: every request looks from then on", async () => {
    const elsewhere = join(root, "shared-pi");
    mkdirSync(elsewhere);
    const { watch, loaded } = followed();
    watch.due(true);
    rmSync(join(cwd, ".pi"), { recursive: true });
    symlinkSync(elsewhere, join(cwd, ".pi"));
    expect(await dueWithin(watch)).toBe(true);
    watch.follow(loaded, true, false);
    for (let i = 0; i < 3; i++) expect(watch.due(true)).toBe(true);
    write(join(elsewhere, "settings.json"), { contextPrune: { protectedTools: ["bash"] } });
    expect(watch.due(true)).toBe(true);
    expect(changedSettings(loaded, cwd, true)?.settings.config.protectedTools).toEqual(["bash"]);
  });

  it("an untrusted project's folder is not watched, and trusting it makes the next request look", async () => {
    const { watch } = followed(false);
    watch.due(false);
    write(projectFile(), { contextPrune: { protectedPaths: ["**/guide.md"] } });
    expect(await stillQuiet(watch, false)).toBe(true);
    expect(watch.due(true)).toBe(true);
  });

  it("a settings file that is a link (its target may change elsewhere) makes every request look", () => {
    const target = join(root, "dotfiles-settings.json");
    write(target, { contextPrune: { minBatchChars: 700 } });
    rmSync(globalFile());
    symlinkSync(target, globalFile());
    const { watch } = followed();
    for (let i = 0; i < 3; i++) expect(watch.due(true)).toBe(true);
  });

  it("a global folder that cannot be watched makes every request look", () => {
    rmSync(agentDir, { recursive: true });
    const { watch } = followed();
    for (let i = 0; i < 3; i++) expect(watch.due(true)).toBe(true);
  });
});
