import { spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parse as parseJsonc, type ParseError } from "jsonc-parser";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { loadConfig } from "../../../core/src/settings/settings-reader.ts";
import {
  addProtectedPath,
  inferFormatting,
  readSettingsText,
  removeProtectedPath,
  SettingsFileError,
  setPruneSetting,
  updateSettingsFile,
} from "../../../core/src/settings/settings-writer.ts";

const DEFAULT_PATHS = DEFAULT_CONFIG.protectedPaths;
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

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

function readSettings(file: string): unknown {
  const errors: ParseError[] = [];
  const settings: unknown = parseJsonc(read(file), errors, { allowTrailingComma: true });
  expect(errors).toEqual([]);
  return settings;
}

function protectedPathsIn(file: string): unknown {
  const settings = readSettings(file) as { contextPrune?: { protectedPaths?: unknown } };
  return settings.contextPrune?.protectedPaths;
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
    const file = write(
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
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS });
    expect(result).toEqual({ added: true, list: ["**/skills/**/*.md", "docs/**"] });
    expect(read(file)).toBe(`{
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
  });

  it("keeps tab indentation and CRLF line endings (exact text)", () => {
    const file = write("settings.json", '{\r\n\t"theme": "dark",\r\n\t"contextPrune": {\r\n\t\t"protectedPaths": ["x/**"]\r\n\t}\r\n}\r\n');
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS });
    expect(result).toEqual({ added: true, list: ["x/**", "docs/**"] });
    expect(read(file)).toBe('{\r\n\t"theme": "dark",\r\n\t"contextPrune": {\r\n\t\t"protectedPaths": [\r\n\t\t\t"x/**",\r\n\t\t\t"docs/**"\r\n\t\t]\r\n\t}\r\n}\r\n');
  });

  it("keeps a byte order mark", () => {
    const file = write("settings.json", '\uFEFF{\n  "a": 1\n}\n');
    setPruneSetting(file, ["minBatchChars"], 10);
    expect(read(file)).toBe('\uFEFF{\n  "a": 1,\n  "contextPrune": {\n    "minBatchChars": 10\n  }\n}\n');
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
    it(`refuses ${name} and leaves the file byte for byte unchanged`, () => {
      const file = write("settings.json", text);
      const before = readFileSync(file);
      const error = expectThrowsSettingsError(() => addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS }), code, file);
      expect(error.file).toBe(file);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(readdirSync(dir)).toEqual(["settings.json"]);
    });
  }

  it("names the position of a parse error", () => {
    const file = write("settings.json", '{\n  "a": 1\n  "b": 2\n}');
    const error = expectThrowsSettingsError(() => setPruneSetting(file, ["enabled"], false), "unparsable", file);
    expect(error.message).toMatch(/CommaExpected at line 3, column 3/);
  });

  it("refuses a directory where the file should be", () => {
    const file = join(dir, "settings.json");
    mkdirSync(file);
    expectThrowsSettingsError(() => setPruneSetting(file, ["enabled"], false), "unreadable", file);
  });

  it("accepts comments and trailing commas (JSONC)", () => {
    const file = write("settings.json", '{\n  // c\n  "a": 1,\n}\n');
    expect(setPruneSetting(file, ["enabled"], false)).toEqual({ changed: true });
    expect(readSettings(file)).toEqual({ a: 1, contextPrune: { enabled: false } });
    expect(read(file)).toContain("// c");
  });
});

describe("creating a settings file", () => {
  it("creates a missing file and its missing .pi directory with 2-space indent", () => {
    const file = join(dir, "project", ".pi", "settings.json");
    const result = addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS });
    expect(result).toEqual({ added: true, list: ["**/skills/**/*.md", "docs/**"] });
    expect(read(file)).toBe('{\n  "contextPrune": {\n    "protectedPaths": [\n      "**/skills/**/*.md",\n      "docs/**"\n    ]\n  }\n}\n');
  });

  it("a change to nothing does not create the file or its directory", () => {
    const file = join(dir, "project", ".pi", "settings.json");
    expect(setPruneSetting(file, ["minBatchChars"], undefined)).toEqual({ changed: false });
    expect(removeProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS })).toEqual({ removed: false, list: [...DEFAULT_PATHS] });
    expect(existsSync(join(dir, "project"))).toBe(false);
  });

  it("treats an empty existing file as {}", () => {
    const file = write("settings.json", "\n");
    setPruneSetting(file, ["enabled"], false);
    expect(read(file)).toBe('{\n  "contextPrune": {\n    "enabled": false\n  }\n}\n');
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
    expect(addProtectedPath({ file, pattern: "a", effective: ["a"] })).toEqual({ added: false, list: ["a"] });
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
    const file = write("settings.json", '{ "theme": "dark" }');
    addProtectedPath({ file, pattern: "notes/*.md", effective: ["**/skills/**/*.md", "from-global/**"] });
    expect(protectedPathsIn(file)).toEqual(["**/skills/**/*.md", "from-global/**", "notes/*.md"]);
  });

  it("starts from the file's own list when it has one", () => {
    const file = write("settings.json", '{ "contextPrune": { "protectedPaths": ["mine/**"] } }');
    const result = addProtectedPath({ file, pattern: "notes/*.md", effective: ["stale/**"] });
    expect(result.list).toEqual(["mine/**", "notes/*.md"]);
  });

  it("replaces an invalid list in the file, starting from the effective one", () => {
    const file = write("settings.json", '{ "contextPrune": { "protectedPaths": "docs" } }');
    const result = addProtectedPath({ file, pattern: "notes/*.md", effective: DEFAULT_PATHS });
    expect(result.list).toEqual(["**/skills/**/*.md", "notes/*.md"]);
    expect(protectedPathsIn(file)).toEqual(result.list);
  });

  it("ignores duplicates", () => {
    const file = write("settings.json", "{}");
    expect(addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS }).added).toBe(true);
    const text = read(file);
    expect(addProtectedPath({ file, pattern: "docs/**", effective: DEFAULT_PATHS })).toEqual({ added: false, list: ["**/skills/**/*.md", "docs/**"] });
    expect(addProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS }).added).toBe(false);
    expect(read(file)).toBe(text);
  });

  it("an effective default already present is not written again", () => {
    const file = join(dir, "settings.json");
    expect(addProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS })).toEqual({ added: false, list: ["**/skills/**/*.md"] });
    expect(existsSync(file)).toBe(false);
  });

  it("removes a pattern and keeps the rest, comments included", () => {
    const file = write(
      "settings.json",
      '{\n  "a": 1, // one\n  "contextPrune": {\n    "protectedPaths": ["**/skills/**/*.md", "docs/**"], // mine\n    "minBatchChars": 5\n  }\n}\n',
    );
    expect(removeProtectedPath({ file, pattern: "docs/**", effective: [] })).toEqual({ removed: true, list: ["**/skills/**/*.md"] });
    expect(read(file)).toBe(
      '{\n  "a": 1, // one\n  "contextPrune": {\n    "protectedPaths": [\n      "**/skills/**/*.md"\n    ], // mine\n    "minBatchChars": 5\n  }\n}\n',
    );
  });

  it("removing the default from a file without a list writes the rest of the effective list", () => {
    const file = write("settings.json", "{}");
    expect(removeProtectedPath({ file, pattern: "**/skills/**/*.md", effective: DEFAULT_PATHS })).toEqual({ removed: true, list: [] });
    expect(readSettings(file)).toEqual({ contextPrune: { protectedPaths: [] } });
  });

  it("removing an absent pattern changes nothing", () => {
    const file = write("settings.json", '{ "contextPrune": { "protectedPaths": ["a"] } }');
    const before = read(file);
    expect(removeProtectedPath({ file, pattern: "b", effective: ["a"] })).toEqual({ removed: false, list: ["a"] });
    expect(read(file)).toBe(before);
  });

  it("rejects an empty pattern", () => {
    expect(() => addProtectedPath({ file: join(dir, "s.json"), pattern: "  ", effective: [] })).toThrow(TypeError);
  });

  it("what is written is what loadConfig reads back", () => {
    const agentDir = join(dir, "agent");
    const cwd = join(dir, "work");
    addProtectedPath({ file: join(cwd, ".pi", "settings.json"), pattern: "docs/**", effective: DEFAULT_PATHS });
    setPruneSetting(join(agentDir, "settings.json"), ["chainCompression", "rollingWindow"], 6);
    const loaded = loadConfig({ agentDir, cwd });
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config.protectedPaths).toEqual(["**/skills/**/*.md", "docs/**"]);
    expect(loaded.config.chainCompression.rollingWindow).toBe(6);
  });
});

describe("setPruneSetting", () => {
  it("sets nested keys, creating parents", () => {
    const file = write("settings.json", '{\n  "theme": "dark"\n}\n');
    expect(setPruneSetting(file, ["chainCompression", "rollingWindow"], 5)).toEqual({ changed: true });
    expect(read(file)).toBe('{\n  "theme": "dark",\n  "contextPrune": {\n    "chainCompression": {\n      "rollingWindow": 5\n    }\n  }\n}\n');
    expect(setPruneSetting(file, ["chainCompression", "rollingWindow"], 5)).toEqual({ changed: false });
  });

  it("undefined removes the key", () => {
    const file = write("settings.json", '{\n  "contextPrune": {\n    "minBatchChars": 5,\n    "enabled": true\n  }\n}\n');
    expect(setPruneSetting(file, ["minBatchChars"], undefined)).toEqual({ changed: true });
    expect(read(file)).toBe('{\n  "contextPrune": {\n    "enabled": true\n  }\n}\n');
  });

  it("rejects an empty key path", () => {
    expect(() => setPruneSetting(join(dir, "s.json"), [], 1)).toThrow(TypeError);
  });
});

describe("two processes writing at once", () => {
  const nodeBinary = existsSync(join(repoRoot, "node_modules/.bin/node")) ? join(repoRoot, "node_modules/.bin/node") : process.execPath;
  const moduleUrl = pathToFileURL(join(repoRoot, "core/src/settings/settings-writer.ts")).href;

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

  it("both processes' patterns end up present, or a call fails with a clear error; never a corrupted file", async () => {
    const file = write("project/.pi/settings.json", '{\n  // shared\n  "theme": "dark"\n}\n');
    const script = write(
      "writer.mjs",
      `import { addProtectedPath } from ${JSON.stringify(moduleUrl)};
const [file, prefix, count, startAt] = process.argv.slice(2);
// Start together: both processes spin until the same moment.
while (Date.now() < Number(startAt)) {}
const outcomes = [];
for (let i = 0; i < Number(count); i++) {
  const pattern = prefix + "/" + i + "/**";
  try {
    addProtectedPath({ file, pattern, effective: ["**/skills/**/*.md"] });
    outcomes.push({ pattern, ok: true });
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
    const outcomes = outputs.flatMap((output) => JSON.parse(output) as Array<{ pattern: string; ok: boolean; code?: string; message?: string }>);

    expect(read(file)).toContain("// shared");
    const list = protectedPathsIn(file) as string[];
    expect(list[0]).toBe("**/skills/**/*.md");
    expect(new Set(list).size).toBe(list.length);
    for (const outcome of outcomes) {
      if (outcome.ok) expect(list).toContain(outcome.pattern);
      else {
        expect(outcome.code).toBe("conflict");
        expect(outcome.message).toMatch(/try again/);
      }
    }
    expect(outcomes.filter((outcome) => outcome.ok).length).toBeGreaterThan(0);
    expect(readdirSync(join(dir, "project/.pi"))).toEqual(["settings.json"]);
  });
});
