import { spawn } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parse as parseJsonc, type ParseError } from "jsonc-parser";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { loadConfig, MAX_SETTINGS_DEPTH } from "../../../core/src/settings/settings-reader.ts";
import { fileSettingsStorage, memorySettingsStorage, type SettingsStorage } from "../../../core/src/settings/settings-storage.ts";
import {
  addProtectedPath,
  inferFormatting,
  readSettingsText,
  removeProtectedPath,
  revertSettingsFileChange,
  SettingsFileError,
  setPruneSetting,
  updateSettingsFile,
} from "../../../core/src/settings/settings-writer.ts";

const DEFAULT_PATHS = DEFAULT_CONFIG.protectedPaths;
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const nodeBinary = existsSync(join(repoRoot, "node_modules/.bin/node")) ? join(repoRoot, "node_modules/.bin/node") : process.execPath;

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pruner-settings-"));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const file = join(dir, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

const read = (file: string) => readFileSync(file, "utf8");

function parseSettings(text: string): unknown {
  const errors: ParseError[] = [];
  const settings: unknown = parseJsonc(text, errors, { allowTrailingComma: true });
  expect(errors).toEqual([]);
  return settings;
}

function protectedPathsIn(text: string): unknown {
  const settings = parseSettings(text) as { contextPrune?: { protectedPaths?: unknown } };
  return settings.contextPrune?.protectedPaths;
}

/** Settings files in memory, for the editing logic: `files` also shows any lock or temp file left behind. */
function inMemory() {
  const files = new Map<string, string>();
  const storage = memorySettingsStorage(files);
  return {
    files,
    storage,
    write(name: string, text: string): string {
      const file = `/home/me/${name}`;
      files.set(file, text);
      return file;
    },
    read(file: string): string {
      const text = files.get(file);
      if (text === undefined) throw new Error(`${file} was not written`);
      return text;
    },
  };
}

function expectThrowsSettingsError(action: () => unknown, code: string, fileMention: string): SettingsFileError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsFileError);
    const settingsError = error as SettingsFileError;
    expect(settingsError.code).toBe(code);
    expect(settingsError.message).toContain(fileMention);
    return settingsError;
  }
  throw new Error("expected a SettingsFileError");
}

describe("comments and formatting survive", () => {
  it("keeps comments, key order and 4-space indentation (exact text)", () => {
    const m = inMemory();
    const file = m.write(
      "settings.json",
      `{
    // my settings
    "theme": "dark", /* keep */
    "contextPrune": {
        "minBatchChars": 500
    },
    "zeta": [1, 2]
}
`,
    );
    const before = m.read(file);
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS, storage: m.storage });
    expect(result).toEqual({
      added: true,
      list: ["**/skills/**/*.md", "docs/**"],
      copied: ["**/skills/**/*.md"],
      change: { file, previousText: before, writtenText: m.read(file) },
    });
    expect(m.read(file)).toBe(`{
    // my settings
    "theme": "dark", /* keep */
    "contextPrune": {
        "minBatchChars": 500,
        "protectedPaths": [
            "**/skills/**/*.md",
            "docs/**"
        ]
    },
    "zeta": [1, 2]
}
`);
    expect([...m.files.keys()]).toEqual([file]);
  });

  it("keeps tab indentation and CRLF line endings (exact text)", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{\r\n\t"theme": "dark",\r\n\t"contextPrune": {\r\n\t\t"protectedPaths": ["x/**"]\r\n\t}\r\n}\r\n');
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS, storage: m.storage });
    expect(result).toMatchObject({ added: true, list: ["x/**", "docs/**"], copied: [] });
    expect(m.read(file)).toBe('{\r\n\t"theme": "dark",\r\n\t"contextPrune": {\r\n\t\t"protectedPaths": [\r\n\t\t\t"x/**",\r\n\t\t\t"docs/**"\r\n\t\t]\r\n\t}\r\n}\r\n');
  });

  it("keeps a byte order mark", () => {
    const m = inMemory();
    const file = m.write("settings.json", '\uFEFF{\n  "a": 1\n}\n');
    setPruneSetting(file, ["minBatchChars"], 10, m.storage);
    expect(m.read(file)).toBe('\uFEFF{\n  "a": 1,\n  "contextPrune": {\n    "minBatchChars": 10\n  }\n}\n');
  });

  it("infers formatting", () => {
    expect(inferFormatting("")).toEqual({ insertSpaces: true, tabSize: 2, eol: "\n" });
    expect(inferFormatting('{\n    "a": {\n        "b": 1\n    }\n}')).toEqual({ insertSpaces: true, tabSize: 4, eol: "\n" });
    expect(inferFormatting('{\r\n\t"a": 1\r\n}')).toEqual({ insertSpaces: false, tabSize: 4, eol: "\r\n" });
  });
});

describe("files that are refused", () => {
  const refused: Array<[string, string, string]> = [
    ["a parse error", '{ "theme": "dark" "contextPrune": {} }', "unparsable"],
    ["an unterminated object", '{ "contextPrune": { "protectedPaths": [', "unparsable"],
    ["a root that is an array", '["a"]', "not-object"],
    ["a root that is a string", '"settings"', "not-object"],
    ["a contextPrune that is not an object", '{ "contextPrune": 5 }', "not-object"],
  ];

  for (const [name, text, code] of refused) {
    it(`refuses ${name} and leaves the file unchanged, with no lock or temp file behind`, () => {
      const m = inMemory();
      const file = m.write("settings.json", text);
      const error = expectThrowsSettingsError(
        () => addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS, storage: m.storage }),
        code,
        file,
      );
      expect(error.file).toBe(file);
      expect(m.read(file)).toBe(text);
      expect([...m.files.keys()]).toEqual([file]);
    });
  }

  it("refuses a parse error on disk and leaves the file byte for byte unchanged", () => {
    const file = write("settings.json", '{ "theme": "dark" "contextPrune": {} }');
    const before = readFileSync(file);
    expectThrowsSettingsError(() => addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS }), "unparsable", file);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });

  it("names the position of a parse error", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{\n  "a": 1\n  "b": 2\n}');
    const error = expectThrowsSettingsError(() => setPruneSetting(file, ["enabled"], false, m.storage), "unparsable", file);
    expect(error.message).toMatch(/CommaExpected at line 3, column 3/);
  });

  it("refuses a file nested thousands of levels deep with a clear error, not a RangeError from the parser", () => {
    for (const depth of [5000, 100_000]) {
      const text = `{ "deep": ${'{"a":'.repeat(depth)}1${"}".repeat(depth)} }`;
      const file = write("settings.json", text);
      const error = expectThrowsSettingsError(() => addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS }), "unparsable", file);
      expect(error.message).toBe(`${file} is nested deeper than ${MAX_SETTINGS_DEPTH} levels, so it is not edited; fix it by hand, it was left unchanged`);
      expect(read(file)).toBe(text);
      expect(readdirSync(dir)).toEqual(["settings.json"]);
    }
  });

  it("refuses a directory where the file should be", () => {
    const file = join(dir, "settings.json");
    mkdirSync(file);
    expectThrowsSettingsError(() => setPruneSetting(file, ["enabled"], false), "unreadable", file);
  });

  it("accepts comments and trailing commas (JSONC)", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{\n  // c\n  "a": 1,\n}\n');
    expect(setPruneSetting(file, ["enabled"], false, m.storage)).toEqual({ changed: true });
    expect(parseSettings(m.read(file))).toEqual({ a: 1, contextPrune: { enabled: false } });
    expect(m.read(file)).toContain("// c");
  });
});

describe("creating a settings file", () => {
  it("creates a missing file and its missing .pi directory with 2-space indent", () => {
    const file = join(dir, "project", ".pi", "settings.json");
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS });
    expect(result).toEqual({
      added: true,
      list: ["**/skills/**/*.md", "docs/**"],
      copied: ["**/skills/**/*.md"],
      change: { file, previousText: undefined, writtenText: read(file) },
    });
    expect(read(file)).toBe('{\n  "contextPrune": {\n    "protectedPaths": [\n      "**/skills/**/*.md",\n      "docs/**"\n    ]\n  }\n}\n');
  });

  it("a change to nothing does not create the file or its directory", () => {
    const file = join(dir, "project", ".pi", "settings.json");
    expect(setPruneSetting(file, ["minBatchChars"], undefined)).toEqual({ changed: false });
    expect(removeProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS })).toEqual({ removed: false, list: [...DEFAULT_PATHS], copied: [], change: undefined });
    expect(existsSync(join(dir, "project"))).toBe(false);
  });

  it("treats an empty existing file as {}", () => {
    const m = inMemory();
    const file = m.write("settings.json", "\n");
    setPruneSetting(file, ["enabled"], false, m.storage);
    expect(m.read(file)).toBe('{\n  "contextPrune": {\n    "enabled": false\n  }\n}\n');
  });

  it("readSettingsText reports a missing file", () => {
    expect(readSettingsText(join(dir, "none.json"))).toEqual({ text: "", exists: false });
    const file = write("settings.json", "{}");
    expect(readSettingsText(file)).toEqual({ text: "{}", exists: true });
  });
});

describe("atomic write", () => {
  it("replaces the file by rename, leaves no temp or lock files, and keeps the mode", () => {
    const file = write("settings.json", '{\n  "a": 1\n}\n');
    chmodSync(file, 0o600);
    const inodeBefore = statSync(file).ino;
    expect(setPruneSetting(file, ["minBatchChars"], 10)).toEqual({ changed: true });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(file).ino).not.toBe(inodeBefore);
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });

  it("keeps an unusual mode too", () => {
    const file = write("settings.json", "{}");
    chmodSync(file, 0o640);
    setPruneSetting(file, ["enabled"], false);
    expect(statSync(file).mode & 0o777).toBe(0o640);
  });

  it("no change → no write (the file is not even replaced)", () => {
    const file = write("settings.json", '{ "contextPrune": { "minBatchChars": 10, "protectedPaths": ["a"] } }');
    const inodeBefore = statSync(file).ino;
    expect(setPruneSetting(file, ["minBatchChars"], 10)).toEqual({ changed: false });
    expect(updateSettingsFile(file, [{ path: ["contextPrune", "minBatchChars"], value: 10 }])).toEqual({ changed: false });
    expect(addProtectedPath({ file, pattern: "a", effective: ["a"] })).toEqual({ added: false, list: ["a"], copied: [], change: undefined });
    expect(statSync(file).ino).toBe(inodeBefore);
  });

  it("writes through a symlink instead of replacing it", () => {
    const real = write("dotfiles/settings.json", "{}");
    const link = join(dir, "settings.json");
    symlinkSync(real, link);
    setPruneSetting(link, ["enabled"], false);
    expect(statSync(link).isFile()).toBe(true);
    expect(readFileSync(real, "utf8")).toContain('"enabled": false');
    expect(readdirSync(join(dir, "dotfiles"))).toEqual(["settings.json"]);
  });

  it("breaks a stale lock left by a crashed writer", () => {
    const file = write("settings.json", "{}");
    const lock = write("settings.json.lock", "12345 deadbeef\n");
    const longAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, longAgo, longAgo);
    expect(setPruneSetting(file, ["enabled"], false)).toEqual({ changed: true });
    expect(existsSync(lock)).toBe(false);
  });

  it("gives up with a clear error while another process holds the lock", () => {
    const file = write("settings.json", "{}");
    write("settings.json.lock", "12345 cafe\n");
    const error = expectThrowsSettingsError(() => setPruneSetting(file, ["enabled"], false), "conflict", file);
    expect(error.message).toMatch(/try again/);
    expect(read(file)).toBe("{}");
  });
});

describe("protectedPaths edits", () => {
  it("starts from the effective list when the file has none, so the default is kept", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{ "theme": "dark" }');
    addProtectedPath({ file, pattern: "notes/*.md", effective: ["**/skills/**/*.md", "from-global/**"], storage: m.storage });
    expect(protectedPathsIn(m.read(file))).toEqual(["**/skills/**/*.md", "from-global/**", "notes/*.md"]);
  });

  it("starts from the file's own list when it has one", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{ "contextPrune": { "protectedPaths": ["mine/**"] } }');
    const result = addProtectedPath({ file, pattern: "notes/*.md", effective: ["stale/**"], storage: m.storage });
    expect(result.list).toEqual(["mine/**", "notes/*.md"]);
    expect(protectedPathsIn(m.read(file))).toEqual(result.list);
  });

  it("replaces an invalid list in the file, starting from the effective one", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{ "contextPrune": { "protectedPaths": "docs" } }');
    const result = addProtectedPath({ file, pattern: "notes/*.md", effective: DEFAULT_PATHS, storage: m.storage });
    expect(result.list).toEqual(["**/skills/**/*.md", "notes/*.md"]);
    expect(protectedPathsIn(m.read(file))).toEqual(result.list);
  });

  it("ignores duplicates", () => {
    const m = inMemory();
    const file = m.write("settings.json", "{}");
    const storage = m.storage;
    expect(addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS, storage }).added).toBe(true);
    const text = m.read(file);
    expect(addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS, storage })).toEqual({ added: false, list: ["**/skills/**/*.md", "docs/**"], copied: [], change: undefined });
    expect(addProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS, storage }).added).toBe(false);
    expect(m.read(file)).toBe(text);
  });

  it("an effective default already present is not written again", () => {
    const m = inMemory();
    const file = "/home/me/settings.json";
    expect(addProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS, storage: m.storage })).toEqual({
      added: false,
      list: ["**/skills/**/*.md"],
      copied: [],
      change: undefined,
    });
    expect(m.files.size).toBe(0);
  });

  it("removes a pattern and keeps the rest, comments included", () => {
    const m = inMemory();
    const file = m.write(
      "settings.json",
      '{\n  "a": 1, // one\n  "contextPrune": {\n    "protectedPaths": ["**/skills/**/*.md", "docs/**"], // mine\n    "minBatchChars": 5\n  }\n}\n',
    );
    expect(removeProtectedPath({ file, pattern: "docs/**", effective: [], storage: m.storage })).toMatchObject({ removed: true, list: ["**/skills/**/*.md"], copied: [] });
    expect(m.read(file)).toBe(
      '{\n  "a": 1, // one\n  "contextPrune": {\n    "protectedPaths": [\n      "**/skills/**/*.md"\n    ], // mine\n    "minBatchChars": 5\n  }\n}\n',
    );
    expect([...m.files.keys()]).toEqual([file]);
  });

  it("removing the default from a file without a list writes the rest of the effective list", () => {
    const m = inMemory();
    const file = m.write("settings.json", "{}");
    expect(removeProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS, storage: m.storage })).toMatchObject({ removed: true, list: [], copied: [] });
    expect(parseSettings(m.read(file))).toEqual({ contextPrune: { protectedPaths: [] } });
  });

  it("removing an absent pattern changes nothing", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{ "contextPrune": { "protectedPaths": ["a"] } }');
    const before = m.read(file);
    expect(removeProtectedPath({ file, pattern: "b", effective: ["a"], storage: m.storage })).toEqual({ removed: false, list: ["a"], copied: [], change: undefined });
    expect(m.read(file)).toBe(before);
  });

  it("rejects an empty pattern", () => {
    const m = inMemory();
    expect(() => addProtectedPath({ file: "/home/me/s.json", pattern: "  ", effective: [], storage: m.storage })).toThrow(TypeError);
    expect(m.files.size).toBe(0);
  });

  for (const where of ["in memory", "on disk"] as const) {
    it(`what is written is what loadConfig reads back (${where})`, () => {
      const storage = where === "in memory" ? inMemory().storage : undefined;
      const root = where === "in memory" ? "/home/me" : dir;
      const agentDir = join(root, "agent");
      const cwd = join(root, "work");
      addProtectedPath({ file: join(cwd, ".pi", "settings.json"), pattern: "docs/**", effective: DEFAULT_PATHS, storage });
      setPruneSetting(join(agentDir, "settings.json"), ["chainCompression", "rollingWindow"], 6, storage);
      const loaded = loadConfig({ agentDir, cwd, projectTrusted: true, storage });
      expect(loaded.warnings).toEqual([]);
      expect(loaded.config.protectedPaths).toEqual(["**/skills/**/*.md", "docs/**"]);
      expect(loaded.config.chainCompression.rollingWindow).toBe(6);
    });
  }
});

describe("setPruneSetting", () => {
  it("sets nested keys, creating parents", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{\n  "theme": "dark"\n}\n');
    expect(setPruneSetting(file, ["chainCompression", "rollingWindow"], 5, m.storage)).toEqual({ changed: true });
    expect(m.read(file)).toBe('{\n  "theme": "dark",\n  "contextPrune": {\n    "chainCompression": {\n      "rollingWindow": 5\n    }\n  }\n}\n');
    expect(setPruneSetting(file, ["chainCompression", "rollingWindow"], 5, m.storage)).toEqual({ changed: false });
  });

  it("undefined removes the key", () => {
    const m = inMemory();
    const file = m.write("settings.json", '{\n  "contextPrune": {\n    "minBatchChars": 5,\n    "enabled": true\n  }\n}\n');
    expect(setPruneSetting(file, ["minBatchChars"], undefined, m.storage)).toEqual({ changed: true });
    expect(m.read(file)).toBe('{\n  "contextPrune": {\n    "enabled": true\n  }\n}\n');
  });

  it("rejects an empty key path", () => {
    expect(() => setPruneSetting("/home/me/s.json", [], 1, inMemory().storage)).toThrow(TypeError);
  });
});

describe("two processes writing at once", () => {
  const storageUrl = pathToFileURL(join(repoRoot, "core/src/settings/settings-storage.ts")).href;
  const writerUrl = pathToFileURL(join(repoRoot, "core/src/settings/settings-writer.ts")).href;

  function runWriter(script: string, args: string[]): Promise<string> {
    return new Promise((resolvePromise, reject) => {
      const child = spawn(nodeBinary, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolvePromise(stdout) : reject(new Error(`writer exited ${code}: ${stderr}`))));
    });
  }

  interface RacedWrite {
    outcome: { ok: true; added: boolean; list: string[]; copied: string[] } | { ok: false; code?: string; message: string };
    /** Every text this writer read from the settings file, in order. */
    reads: string[];
  }

  it("both read the file before either renames: the lock and the re-read under it keep both patterns", async () => {
    const original = '{\n  // shared\n  "theme": "dark"\n}\n';
    const file = write("project/.pi/settings.json", original);
    const barrier = join(dir, "barrier");
    mkdirSync(barrier);
    // Each writer is held right after its first read of the settings file until the other has read
    // it too; the real file storage does everything else (lock file, temp file, compare, rename).
    const script = write(
      "raced-writer.mjs",
      `import { existsSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileSettingsStorage } from ${JSON.stringify(storageUrl)};
import { addProtectedPath } from ${JSON.stringify(writerUrl)};
const [file, pattern, me, other, barrier] = process.argv.slice(2);
const target = realpathSync(file);
const reads = [];
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const storage = {
  ...fileSettingsStorage,
  readFile(path) {
    const result = fileSettingsStorage.readFile(path);
    if (path !== target) return result;
    reads.push(result.text);
    if (reads.length === 1) {
      writeFileSync(join(barrier, me), "");
      const deadline = Date.now() + 20000;
      while (!existsSync(join(barrier, other))) {
        if (Date.now() > deadline) throw new Error("the other writer never read the file");
        sleep(2);
      }
    }
    return result;
  },
};
let outcome;
try {
  outcome = { ok: true, ...addProtectedPath({ file, pattern, effective: ["**/skills/**/*.md"], storage }) };
} catch (error) {
  outcome = { ok: false, code: error.code, message: error.message };
}
process.stdout.write(JSON.stringify({ outcome, reads }));
`,
    );
    const [alpha, beta] = (
      await Promise.all([
        runWriter(script, [file, "alpha/**", "alpha", "beta", barrier]),
        runWriter(script, [file, "beta/**", "beta", "alpha", barrier]),
      ])
    ).map((output) => JSON.parse(output) as RacedWrite);

    // The race happened: each writer's first read is the file as it was before either wrote.
    expect(alpha!.reads[0]).toBe(original);
    expect(beta!.reads[0]).toBe(original);
    // The writer that took the lock second read the file again under it and found the first's pattern.
    const sawOther = (raced: RacedWrite, pattern: string) => raced.reads.slice(1).some((text) => text.includes(pattern));
    expect([sawOther(alpha!, "beta/**"), sawOther(beta!, "alpha/**")].filter(Boolean)).toHaveLength(1);
    const [first, second, firstPattern, secondPattern] = sawOther(beta!, "alpha/**")
      ? [alpha!, beta!, "alpha/**", "beta/**"]
      : [beta!, alpha!, "beta/**", "alpha/**"];

    expect(first.outcome).toMatchObject({ ok: true, added: true, list: ["**/skills/**/*.md", firstPattern], copied: ["**/skills/**/*.md"] });
    // The second found the first's list in the file: it copied nothing.
    expect(second.outcome).toMatchObject({ ok: true, added: true, list: ["**/skills/**/*.md", firstPattern, secondPattern], copied: [] });
    expect(read(file)).toBe(
      `{\n  // shared\n  "theme": "dark",\n  "contextPrune": {\n    "protectedPaths": [\n      "**/skills/**/*.md",\n      "${firstPattern}",\n      "${secondPattern}"\n    ]\n  }\n}\n`,
    );
    expect(readdirSync(join(dir, "project/.pi"))).toEqual(["settings.json"]);
  });

  it("25 patterns each, started together: every call succeeds and all 50 patterns are in the file once", async () => {
    const file = write("project/.pi/settings.json", '{\n  // shared\n  "theme": "dark"\n}\n');
    const script = write(
      "writer.mjs",
      `import { addProtectedPath } from ${JSON.stringify(writerUrl)};
const [file, prefix, count, startAt] = process.argv.slice(2);
// Start together: both processes spin until the same moment.
while (Date.now() < Number(startAt)) {}
const outcomes = [];
for (let i = 0; i < Number(count); i++) {
  const pattern = prefix + "/" + i + "/**";
  try {
    outcomes.push({ pattern, ok: true, ...addProtectedPath({ file, pattern, effective: ["**/skills/**/*.md"] }) });
  } catch (error) {
    outcomes.push({ pattern, ok: false, code: error.code, message: error.message });
  }
}
process.stdout.write(JSON.stringify(outcomes));
`,
    );
    const perWriter = 25;
    const startAt = String(Date.now() + 1500);
    const outputs = await Promise.all(["alpha", "beta"].map((prefix) => runWriter(script, [file, prefix, String(perWriter), startAt])));
    const outcomes = outputs.flatMap((output) => JSON.parse(output) as Array<{ pattern: string; ok: boolean; added?: boolean }>);

    expect(outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
    expect(outcomes.every((outcome) => outcome.added === true)).toBe(true);
    expect(read(file)).toContain("// shared");
    const list = protectedPathsIn(read(file)) as string[];
    expect(list[0]).toBe("**/skills/**/*.md");
    expect([...list].sort()).toEqual(["**/skills/**/*.md", ...outcomes.map((outcome) => outcome.pattern)].sort());
    expect(readdirSync(join(dir, "project/.pi"))).toEqual(["settings.json"]);
  });
});

describe("a change by someone who ignores the lock (Pi saving its settings, an editor)", () => {
  /** The real file storage, with `outsider` run right after each temp file is written, before the writer compares and renames. */
  function storageWithOutsider(outsider: (attempt: number) => void): SettingsStorage {
    let attempts = 0;
    return {
      ...fileSettingsStorage,
      createFile(path, text, options) {
        fileSettingsStorage.createFile(path, text, options);
        if (path.endsWith(".tmp")) outsider(++attempts);
      },
    };
  }

  it("made between the writer's read and its rename: noticed, and the edit is redone on the new text", () => {
    const file = write("settings.json", '{\n  // shared\n  "theme": "dark"\n}\n');
    let outsiderWrites = 0;
    const storage = storageWithOutsider((attempt) => {
      if (attempt > 1) return;
      outsiderWrites++;
      writeFileSync(file, '{\n  // shared\n  "theme": "light"\n}\n');
    });
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS, storage });
    expect(result).toMatchObject({ added: true, list: ["**/skills/**/*.md", "docs/**"] });
    // What it wrote over is the outsider's text, not the one it first read.
    expect(result.change?.previousText).toBe('{\n  // shared\n  "theme": "light"\n}\n');
    expect(outsiderWrites).toBe(1);
    expect(read(file)).toBe('{\n  // shared\n  "theme": "light",\n  "contextPrune": {\n    "protectedPaths": [\n      "**/skills/**/*.md",\n      "docs/**"\n    ]\n  }\n}\n');
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });

  it("another program replacing the file by rename every few milliseconds: no write lands on a newer file, nothing either side wrote is lost", async () => {
    const file = write("project/.pi/settings.json", '{\n  "theme": "dark"\n}\n');
    const mutex = join(dir, "mutex");
    const stop = join(dir, "stop");
    // The other program ignores the lock: again and again it re-reads the file, adds a key of its
    // own and renames its copy over the file, until told to stop (8 seconds at most). It takes turns
    // on `mutex` with the writer's last step (in the storage: compare with the file on disk, then
    // rename), which leaves out two things: its own read-modify-rename never replaces one of the
    // writer's files (that loss would be its doing), and its rename never falls in the microseconds
    // between the writer's compare and rename, which no POSIX call closes. Anywhere else, between
    // the writer's read and that last step included, it may replace the file.
    const outsider = write(
      "outsider.mjs",
      `import { closeSync, existsSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
const [file, mutex, stop] = process.argv.slice(2);
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const take = () => {
  for (;;) {
    try {
      return closeSync(openSync(mutex, "wx"));
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      sleep(0.2);
    }
  }
};
const keys = [];
const deadline = Date.now() + 8000;
while (!existsSync(stop) && Date.now() < deadline) {
  take();
  try {
    const settings = JSON.parse(readFileSync(file, "utf8"));
    const key = "outsider-" + keys.length;
    settings[key] = true;
    writeFileSync(file + ".outsider", JSON.stringify(settings, null, 2) + "\\n");
    // A moment between its read and its rename, as a program that saves what it read a while ago.
    sleep(Math.random() * 2);
    renameSync(file + ".outsider", file);
    keys.push(key);
  } finally {
    unlinkSync(mutex);
  }
  sleep(1 + Math.random() * 4);
}
process.stdout.write(JSON.stringify(keys));
`,
    );
    const child = spawn(nodeBinary, [outsider, file, mutex, stop], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let errors = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
    const exited = new Promise<number | null>((resolvePromise) => child.on("close", resolvePromise));

    const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    const withMutex = <T>(step: () => T): T => {
      for (;;) {
        try {
          closeSync(openSync(mutex, "wx"));
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
          sleepSync(0.2);
        }
      }
      try {
        return step();
      } finally {
        unlinkSync(mutex);
      }
    };
    // What was on disk at each of the writer's renames, and how many temp files (attempts) it made.
    const replaced: string[] = [];
    let attempts = 0;
    const storage: SettingsStorage = {
      ...fileSettingsStorage,
      createFile(path, text, options) {
        if (path.endsWith(".tmp")) attempts++;
        fileSettingsStorage.createFile(path, text, options);
      },
      rename: (from, to) =>
        withMutex(() => {
          const onDisk = read(to);
          fileSettingsStorage.rename(from, to);
          replaced.push(onDisk);
        }),
      replaceIfUnchanged: (from, to, expected) =>
        withMutex(() => {
          const onDisk = read(to);
          const done = fileSettingsStorage.replaceIfUnchanged(from, to, expected);
          if (done) replaced.push(onDisk);
          return done;
        }),
    };

    const writes = 24;
    const succeeded: string[] = [];
    let outsiderKeys: string[];
    try {
      // The writer starts once the other program is replacing the file.
      const started = Date.now();
      while (!read(file).includes("outsider-0") && Date.now() - started < 5000) await new Promise((resolvePromise) => setTimeout(resolvePromise, 2));
      expect(read(file), errors).toContain("outsider-0");
      for (let i = 0; i < writes; i++) {
        const pattern = `mine/${i}/**`;
        const renamesBefore = replaced.length;
        let outcome: ReturnType<typeof addProtectedPath> | SettingsFileError;
        try {
          outcome = addProtectedPath({ file, pattern, effective: [], storage });
        } catch (error) {
          // A write that gives up says so, and writes nothing.
          expect(error).toBeInstanceOf(SettingsFileError);
          outcome = error as SettingsFileError;
        }
        if (outcome instanceof SettingsFileError) {
          expect(outcome.code).toBe("conflict");
          expect(replaced.length).toBe(renamesBefore);
        } else {
          expect(outcome.added).toBe(true);
          // No write landed on a newer file: the file it renamed over is the one it had read.
          expect(replaced.length).toBe(renamesBefore + 1);
          expect(replaced.at(-1), `write ${i} renamed over a file it had not read`).toBe(outcome.change?.previousText);
          succeeded.push(pattern);
        }
        await new Promise((resolvePromise) => setTimeout(resolvePromise, Math.random() * 4));
      }
    } finally {
      writeFileSync(stop, "");
      expect(await exited, errors).toBe(0);
      outsiderKeys = JSON.parse(output) as string[];
    }

    // Nothing lost: every key of the other program and every pattern of a write that succeeded.
    const final = JSON.parse(read(file)) as Record<string, unknown> & { contextPrune?: { protectedPaths?: string[] } };
    expect(outsiderKeys.filter((key) => !(key in final))).toEqual([]);
    expect(final.contextPrune?.protectedPaths ?? []).toEqual(succeeded);
    // The race happened: the other program kept replacing the file, and writes had to be redone.
    expect(outsiderKeys.length).toBeGreaterThan(writes);
    expect(attempts).toBeGreaterThan(succeeded.length);
    expect(succeeded.length).toBeGreaterThanOrEqual(writes / 3);
    expect(readdirSync(join(dir, "project/.pi"))).toEqual(["settings.json"]);
  });

  it("made before every rename: refused as a conflict, the outsider's text kept, nothing of ours written", () => {
    const file = write("settings.json", "{}");
    const storage = storageWithOutsider((attempt) => writeFileSync(file, `{ "theme": "saved ${attempt}" }`));
    const error = expectThrowsSettingsError(() => setPruneSetting(file, ["enabled"], false, storage), "conflict", file);
    expect(error.message).toBe(`${file} changed while writing; nothing was written, try again`);
    expect(read(file)).toBe('{ "theme": "saved 8" }');
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });
});

describe("the file storage renames only over the file that was read", () => {
  const temp = () => write("new.tmp", '{ "new": true }');
  const readNow = (file: string) => fileSettingsStorage.readFile(file);

  it("the same file as read: replaced, and nothing left beside it", () => {
    const file = write("settings.json", '{ "old": true }');
    const before = readNow(file);
    expect(fileSettingsStorage.replaceIfUnchanged(temp(), file, { exists: true, ...before })).toBe(true);
    expect(read(file)).toBe('{ "new": true }');
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });

  it("replaced by rename since the read, even with the same text: not replaced", () => {
    const file = write("settings.json", '{ "old": true }');
    const before = readNow(file);
    writeFileSync(join(dir, "other"), '{ "old": true }');
    renameSync(join(dir, "other"), file);
    const from = temp();
    expect(fileSettingsStorage.replaceIfUnchanged(from, file, { exists: true, ...before })).toBe(false);
    expect(read(file)).toBe('{ "old": true }');
    expect(readdirSync(dir).sort()).toEqual(["new.tmp", "settings.json"]);
  });

  it("changed in place since the read: not replaced", () => {
    const file = write("settings.json", '{ "old": true }');
    const before = readNow(file);
    writeFileSync(file, '{ "edited": true }');
    expect(fileSettingsStorage.replaceIfUnchanged(temp(), file, { exists: true, ...before })).toBe(false);
    expect(read(file)).toBe('{ "edited": true }');
  });

  it("removed since the read: not created again", () => {
    const file = write("settings.json", '{ "old": true }');
    const before = readNow(file);
    rmSync(file);
    expect(fileSettingsStorage.replaceIfUnchanged(temp(), file, { exists: true, ...before })).toBe(false);
    expect(existsSync(file)).toBe(false);
  });

  it("no file when read, and one has appeared since: it is kept", () => {
    const file = join(dir, "settings.json");
    const from = temp();
    writeFileSync(file, '{ "theirs": true }');
    expect(fileSettingsStorage.replaceIfUnchanged(from, file, { exists: false, text: "" })).toBe(false);
    expect(read(file)).toBe('{ "theirs": true }');
  });

  it("no file when read, and still none: created, and the temp file's name is gone", () => {
    const file = join(dir, "settings.json");
    expect(fileSettingsStorage.replaceIfUnchanged(temp(), file, { exists: false, text: "" })).toBe(true);
    expect(read(file)).toBe('{ "new": true }');
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });
});

describe("taking a protectedPaths edit back", () => {
  const commented =
    '{\n  // my settings\n  "theme": "dark",\n  "contextPrune": {\n    "protectedPaths": [\n      "src/**", // the parser\n      "docs/**" /* guides */\n    ],\n    "minBatchChars": 500\n  }\n}\n';

  it("a removal taken back gives the file its exact text again, comments inside the list included", () => {
    const file = write("settings.json", commented);
    const result = removeProtectedPath({ file, pattern: "src/**", effective: DEFAULT_PATHS });
    expect(protectedPathsIn(read(file))).toEqual(["docs/**"]);
    expect(result.change).toEqual({ file, previousText: commented, writtenText: read(file) });
    revertSettingsFileChange(result.change!);
    expect(read(file)).toBe(commented);
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });

  it("keeps the file's mode and writes through a symlink", () => {
    const real = write("dotfiles/settings.json", commented);
    chmodSync(real, 0o640);
    const link = join(dir, "settings.json");
    symlinkSync(real, link);
    const { change } = removeProtectedPath({ file: link, pattern: "docs/**", effective: DEFAULT_PATHS });
    revertSettingsFileChange(change!);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(read(real)).toBe(commented);
    expect(statSync(real).mode & 0o777).toBe(0o640);
  });

  it("an edit that created the file is taken back by removing the file", () => {
    const file = join(dir, "project", ".pi", "settings.json");
    const { change, copied } = removeProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS });
    expect(copied).toEqual([]);
    expect(change?.previousText).toBeUndefined();
    revertSettingsFileChange(change!);
    expect(existsSync(file)).toBe(false);
  });

  const laterEdits: [string, (file: string) => void][] = [
    ["another pattern added", (file) => addProtectedPath({ file, pattern: "notes/**", effective: DEFAULT_PATHS })],
    ["a hand edit that no longer parses", (file) => writeFileSync(file, '{ "contextPrune": { "protectedPaths": [ }')],
    ["the same list written with other formatting", (file) => writeFileSync(file, '{"theme":"dark","contextPrune":{"protectedPaths":["docs/**"],"minBatchChars":500}}')],
    ["the file deleted", (file) => rmSync(file)],
  ];
  for (const [what, laterEdit] of laterEdits) {
    it(`refuses when the file changed since (${what}) and leaves it as it is`, () => {
      const file = write("settings.json", commented);
      const { change } = removeProtectedPath({ file, pattern: "src/**", effective: DEFAULT_PATHS });
      laterEdit(file);
      const after = existsSync(file) ? read(file) : undefined;
      const error = expectThrowsSettingsError(() => revertSettingsFileChange(change!), "changed-since", file);
      expect(error.message).toBe(`${file} has changed since that edit, so it cannot be taken back without losing the newer change; it was left as it is`);
      expect(existsSync(file) ? read(file) : undefined).toBe(after);
      expect(readdirSync(dir).filter((name) => name !== "settings.json")).toEqual([]);
    });
  }

  it("taken back once only: a second time finds the file changed", () => {
    const file = write("settings.json", commented);
    const { change } = removeProtectedPath({ file, pattern: "src/**", effective: DEFAULT_PATHS });
    revertSettingsFileChange(change!);
    expectThrowsSettingsError(() => revertSettingsFileChange(change!), "changed-since", file);
    expect(read(file)).toBe(commented);
  });

  it("a change made under it by someone who ignores the lock is not clobbered", () => {
    const file = write("settings.json", commented);
    const { change } = removeProtectedPath({ file, pattern: "src/**", effective: DEFAULT_PATHS });
    const outsiderText = '{ "theme": "light" }';
    const storage: SettingsStorage = {
      ...fileSettingsStorage,
      createFile(path, text, options) {
        fileSettingsStorage.createFile(path, text, options);
        if (path.endsWith(".tmp")) writeFileSync(file, outsiderText);
      },
    };
    expectThrowsSettingsError(() => revertSettingsFileChange(change!, storage), "changed-since", file);
    expect(read(file)).toBe(outsiderText);
    expect(readdirSync(dir)).toEqual(["settings.json"]);
  });

  it("an add into a file without a list reports the inherited patterns it copied", () => {
    const file = write("settings.json", '{ "theme": "dark" }');
    expect(addProtectedPath({ file, pattern: "notes/**", effective: ["**/skills/**/*.md", "from-global/**"] }).copied).toEqual(["**/skills/**/*.md", "from-global/**"]);
    expect(addProtectedPath({ file, pattern: "more/**", effective: ["**/skills/**/*.md", "from-global/**"] }).copied).toEqual([]);
    const other = write("other.json", "{}");
    expect(removeProtectedPath({ file: other, pattern: "b/**", effective: ["a/**", "b/**", "c/**"] }).copied).toEqual(["a/**", "c/**"]);
  });
});
