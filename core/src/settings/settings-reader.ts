// Reading Pi's settings files: where they are, the lenient read that never throws, and the
// effective `contextPrune` settings of a working directory.
import { homedir } from "node:os";
import { join } from "node:path";
import { createScanner, parse as parseJsonc, printParseErrorCode, type ParseError, type SyntaxKind } from "jsonc-parser";
import { isRecord } from "../shapes/json.ts";
import { SETTINGS_KEY, describeValue, resolveConfig, type ConfigWarning, type PruneConfig } from "./config.ts";
import { fileSettingsStorage, MAX_SETTINGS_FILE_BYTES, type SettingsStorage } from "./settings-storage.ts";

export interface SettingsSource {
  path: string;
  exists: boolean;
  /** Unreadable or unparsable: reported as one warning and treated as empty. */
  error?: string;
  /** The project is not trusted, so its file was not opened (`exists` is then false). */
  untrusted?: true;
  /** The file holds nothing but white space (as when caught between a save's truncate and its write): no settings. */
  empty?: true;
}

/**
 * Settings files nest a few levels; a file nested deeper than this is refused before it is parsed
 * (jsonc-parser parses recursively, and a cloned repository's settings file can nest thousands deep).
 */
export const MAX_SETTINGS_DEPTH = 64;

export function expandHome(path: string, home: string = homedir()): string {
  if (path === "~") return home;
  if (path.startsWith("~/") || path.startsWith("~\\")) return join(home, path.slice(2));
  return path;
}

/** Pi's agent directory: PI_CODING_AGENT_DIR (a leading ~ expanded), else ~/.pi/agent. */
export function agentDirFrom(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.PI_CODING_AGENT_DIR;
  if (fromEnv) return expandHome(fromEnv);
  return join(homedir(), ".pi", "agent");
}

export function settingsPaths(opts: { agentDir: string; cwd: string }): { global: string; project: string } {
  return {
    global: join(opts.agentDir, "settings.json"),
    project: join(opts.cwd, ".pi", "settings.json"),
  };
}

/** Where a parse error sits, as 1-based line:column. */
export function describeParseError(text: string, error: ParseError): string {
  const before = text.slice(0, error.offset);
  const line = before.split("\n").length;
  const column = error.offset - before.lastIndexOf("\n");
  return `${printParseErrorCode(error.error)} at line ${line}, column ${column}`;
}

function stripByteOrderMark(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

// jsonc-parser's token kinds (its SyntaxKind is a const enum, which isolated modules cannot read).
const TOKEN = {
  openBrace: 1 as SyntaxKind,
  closeBrace: 2 as SyntaxKind,
  openBracket: 3 as SyntaxKind,
  closeBracket: 4 as SyntaxKind,
  eof: 17 as SyntaxKind,
} as const;

/**
 * Whether the brackets of `text` nest deeper than `limit`, counted over jsonc-parser's own tokens
 * (brackets inside strings and comments do not count) without recursion. A closing bracket counts
 * only when it closes the innermost open one, as the parser only then leaves a level: the parser
 * never goes deeper than this count, whatever the text holds.
 */
export function nestsDeeperThan(text: string, limit: number = MAX_SETTINGS_DEPTH): boolean {
  const scanner = createScanner(text, true);
  const open: SyntaxKind[] = [];
  for (let token = scanner.scan(); token !== TOKEN.eof; token = scanner.scan()) {
    if (token === TOKEN.openBrace || token === TOKEN.openBracket) {
      open.push(token);
      if (open.length > limit) return true;
    } else if (token === TOKEN.closeBrace || token === TOKEN.closeBracket) {
      if (open.at(-1) === (token === TOKEN.closeBrace ? TOKEN.openBrace : TOKEN.openBracket)) open.pop();
    }
  }
  return false;
}

function sizeText(bytes: number): string {
  return `${bytes.toLocaleString("en-US")} bytes`;
}

const TOO_LARGE = `larger than ${MAX_SETTINGS_FILE_BYTES / (1024 * 1024)} MiB`;

/** Why the storage refused to read a settings file, in words: "larger than 4 MiB (… bytes)", "not a regular file", or the error's code. */
export function readFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EFBIG") {
    const size = (error as { size?: number }).size;
    return size === undefined ? TOO_LARGE : `${TOO_LARGE} (${sizeText(size)})`;
  }
  if (code === "ENOTREG") return "not a regular file";
  return code ?? String(error);
}

/**
 * Why a settings file's text must not be parsed at all (too large, nested too deep), or undefined.
 * Cheap and never throws; the settings writer can ask it before it parses a file to edit.
 */
export function settingsTextProblem(text: string): string | undefined {
  if (text.length > MAX_SETTINGS_FILE_BYTES) return `${TOO_LARGE} (${sizeText(Buffer.byteLength(text))})`;
  if (nestsDeeperThan(text)) return `nested deeper than ${MAX_SETTINGS_DEPTH} levels`;
  return undefined;
}

/**
 * Settings text (no byte order mark) parsed leniently: comments and trailing commas allowed.
 * Never throws: a refused, unparsable or non-object text gives the reason instead.
 */
function parseSettingsText(text: string): { settings: Record<string, unknown> } | { error: string } {
  const problem = settingsTextProblem(text);
  if (problem !== undefined) return { error: problem };
  const errors: ParseError[] = [];
  let parsed: unknown;
  try {
    parsed = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  } catch (error) {
    return { error: `could not be parsed (${error instanceof Error ? error.message : String(error)})` };
  }
  if (errors.length > 0) return { error: `not valid JSON (${describeParseError(text, errors[0])})` };
  if (!isRecord(parsed)) return { error: `expected a JSON object at the top, got ${describeValue(parsed)}` };
  return { settings: parsed };
}

/**
 * Reads a settings file leniently (comments and trailing commas allowed) through the storage's one
 * bounded read. Never throws.
 */
export function readSettingsObject(
  path: string,
  storage: SettingsStorage = fileSettingsStorage,
): { source: SettingsSource; settings: Record<string, unknown> } {
  const failed = (error: string) => ({ source: { path, exists: true, error }, settings: {} });
  let text: string;
  try {
    text = stripByteOrderMark(storage.readFile(path).text);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { source: { path, exists: false }, settings: {} };
    return failed(code === "EFBIG" ? readFailure(error) : `cannot read: ${readFailure(error)}`);
  }
  if (text.trim() === "") return { source: { path, exists: true, empty: true }, settings: {} };
  const parsed = parseSettingsText(text);
  if ("error" in parsed) return failed(parsed.error);
  return { source: { path, exists: true }, settings: parsed.settings };
}

export interface LoadedConfig {
  config: PruneConfig;
  warnings: ConfigWarning[];
  global: SettingsSource;
  project: SettingsSource;
  globalBlock: unknown;
  projectBlock: unknown;
}

/**
 * Reads the settings files (never modifies them) and resolves their `contextPrune` blocks. The
 * project's file comes with whatever repository is open, so it is opened only when the caller
 * says the project is trusted; there is no default, each caller must decide.
 */
export function loadConfig(opts: { agentDir: string; cwd: string; projectTrusted: boolean; storage?: SettingsStorage }): LoadedConfig {
  const paths = settingsPaths(opts);
  const globalFile = readSettingsObject(paths.global, opts.storage);
  const projectFile =
    opts.projectTrusted === true
      ? readSettingsObject(paths.project, opts.storage)
      : { source: { path: paths.project, exists: false, untrusted: true } as SettingsSource, settings: {} as Record<string, unknown> };
  const fileWarnings: ConfigWarning[] = [];
  for (const [source, file] of [["global", globalFile], ["project", projectFile]] as const) {
    if (file.source.error === undefined) continue;
    fileWarnings.push({
      key: file.source.path,
      message: `${file.source.path}: ${file.source.error}; its ${SETTINGS_KEY} settings are ignored`,
      source,
    });
  }
  // Own keys only: jsonc-parser turns a "__proto__" key into the object's prototype, and Pi (JSON.parse) does not.
  const globalBlock = Object.hasOwn(globalFile.settings, SETTINGS_KEY) ? globalFile.settings[SETTINGS_KEY] : undefined;
  const projectBlock = Object.hasOwn(projectFile.settings, SETTINGS_KEY) ? projectFile.settings[SETTINGS_KEY] : undefined;
  const resolved = resolveConfig(globalBlock, projectBlock);
  return {
    config: resolved.config,
    warnings: [...fileWarnings, ...resolved.warnings],
    global: globalFile.source,
    project: projectFile.source,
    globalBlock,
    projectBlock,
  };
}
