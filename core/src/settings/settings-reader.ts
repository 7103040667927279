// Reading Pi's settings files: where they are, the lenient read that never throws, and the
// effective `contextPrune` settings of a working directory.
import { homedir } from "node:os";
import { join } from "node:path";
import { parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser";
import { isRecord } from "../shapes/json.ts";
import { SETTINGS_KEY, describeValue, resolveConfig, type ConfigWarning, type PruneConfig } from "./config.ts";
import { fileSettingsStorage, type SettingsStorage } from "./settings-storage.ts";

export interface SettingsSource {
  path: string;
  exists: boolean;
  /** Unreadable or unparsable: reported as one warning and treated as empty. */
  error?: string;
}

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

export function stripByteOrderMark(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Reads a settings file leniently (comments and trailing commas allowed). Never throws. */
export function readSettingsObject(
  path: string,
  storage: SettingsStorage = fileSettingsStorage,
): { source: SettingsSource; settings: Record<string, unknown> } {
  let text: string;
  try {
    text = stripByteOrderMark(storage.readFile(path).text);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { source: { path, exists: false }, settings: {} };
    const reason = code === "ENOTREG" ? "not a regular file" : (code ?? String(error));
    return { source: { path, exists: true, error: `cannot read: ${reason}` }, settings: {} };
  }
  if (text.trim() === "") return { source: { path, exists: true }, settings: {} };
  const errors: ParseError[] = [];
  const parsed: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    return { source: { path, exists: true, error: `not valid JSON (${describeParseError(text, errors[0])})` }, settings: {} };
  }
  if (!isRecord(parsed)) {
    return { source: { path, exists: true, error: `expected a JSON object at the top, got ${describeValue(parsed)}` }, settings: {} };
  }
  return { source: { path, exists: true }, settings: parsed };
}

export interface LoadedConfig {
  config: PruneConfig;
  warnings: ConfigWarning[];
  global: SettingsSource;
  project: SettingsSource;
  globalBlock: unknown;
  projectBlock: unknown;
}

/** Reads both settings files (never modifies them) and resolves their `contextPrune` blocks. */
export function loadConfig(opts: { agentDir: string; cwd: string; storage?: SettingsStorage }): LoadedConfig {
  const paths = settingsPaths(opts);
  const globalFile = readSettingsObject(paths.global, opts.storage);
  const projectFile = readSettingsObject(paths.project, opts.storage);
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
