/**
 * An isolated Pi workspace in a temp folder: a cwd with the test's files, and its own agent dir
 * (PI_CODING_AGENT_DIR) with settings.json (retries off, project trust "always" unless told
 * otherwise) and models.json (provider `mock`, model `m`, api `openai-completions`, pointed at the
 * scripted model server of ./model-server.ts). `model.api: "anthropic-messages"` makes the mock an
 * Anthropic Messages model instead (the same server answers it); `model.id` and `model.cost` let it
 * stand in for a registry model, e.g. claude-sonnet-4-6 with its prices.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { sessionDirFor } from "../../core/src/session/session-files.ts";

export const MOCK_PROVIDER = "mock";
export const MOCK_MODEL_ID = "m";
export const MOCK_MODEL = `${MOCK_PROVIDER}/${MOCK_MODEL_ID}`;

export interface MockModelOptions {
  /** Pi's api for the mock provider. Default "openai-completions"; the server speaks the first two only (the others reach it and get a 404). */
  api?: "openai-completions" | "anthropic-messages" | "openai-responses" | "bedrock-converse-stream";
  /** The provider's key (default `test-key`); Pi's Anthropic provider treats a key holding `sk-ant-oat` as an OAuth login. */
  apiKey?: string;
  /** The model id (default `m`); run Pi with `--model` set to the workspace's `modelRef`. */
  id?: string;
  /** Registry prices in USD per million tokens, as models.json takes them. */
  cost?: { input: number; output: number; cacheRead: number; cacheWrite: number };
  contextWindow?: number;
  maxTokens?: number;
  /**
   * Whether the model thinks. An Anthropic mock defaults to true: with it (and Pi's default
   * thinking level) Pi sends a `thinking` parameter and sends earlier thinking blocks back.
   */
  reasoning?: boolean;
  /** Extra fields merged into the model entry (e.g. `compat`). */
  extra?: Record<string, unknown>;
}

export interface PiWorkspaceOptions {
  /** Files of the workspace cwd, by relative path. */
  files?: Record<string, string>;
  /** The model server's `baseUrl` (`server.baseUrl`); can be set later with `setBaseUrl`. */
  baseUrl?: string;
  /** Merged over the default agent settings (`retry.enabled: false`, trust, default model). */
  settings?: Record<string, unknown>;
  /** Written to `<cwd>/.pi/settings.json` (loaded when the project is trusted). */
  projectSettings?: Record<string, unknown>;
  /** `defaultProjectTrust` of the agent settings. Default "always" (project `.pi/` loads in print/json/rpc). */
  projectTrust?: "always" | "ask" | "never";
  /** Files of the agent dir, by relative path (e.g. `extensions/x.ts`, `AGENTS.md`). */
  agentFiles?: Record<string, string>;
  model?: MockModelOptions;
  /** Prefix of the temp dir name. */
  prefix?: string;
}

export interface PiWorkspace {
  /** The temp root holding both folders below. */
  root: string;
  /** PI_CODING_AGENT_DIR */
  agentDir: string;
  /** The cwd Pi runs in. */
  cwd: string;
  /** `provider/id` of the mock model, for `--model` (`mock/m` unless `model.id` says otherwise). */
  modelRef: string;
  /** Pi's default session folder for `cwd`: `<agentDir>/sessions/--<cwd>--/`. */
  sessionDir: string;
  baseUrl: string;
  /** Write a workspace file (relative to cwd); returns its absolute path. */
  writeFile(rel: string, content: string): string;
  readFile(rel: string): string;
  /** Merge into agent settings.json (top-level keys replaced). */
  updateSettings(patch: Record<string, unknown>): void;
  readSettings(): Record<string, unknown>;
  /** Write `<cwd>/.pi/settings.json`. */
  writeProjectSettings(settings: Record<string, unknown>): void;
  /** Point the `mock` provider at another server (or a dead port). */
  setBaseUrl(baseUrl: string): void;
  /** Every session file under the agent dir, oldest first (by mtime). */
  sessionFiles(): string[];
  /** The session file of `sessionId`, or the newest one. */
  findSessionFile(sessionId?: string): string | undefined;
  /** Remove the temp root. */
  cleanup(): void;
}

function writeJson(file: string, value: unknown) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function listJsonl(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...listJsonl(p));
    else if (e.isFile() && e.name.endsWith(".jsonl")) out.push(p);
  }
  return out;
}

export function createPiWorkspace(opts: PiWorkspaceOptions = {}): PiWorkspace {
  // realpath: Pi resolves the cwd, and /tmp may be a symlink (macOS).
  const root = realpathSync(mkdtempSync(join(tmpdir(), opts.prefix ?? "pi-e2e-")));
  const agentDir = join(root, "agent");
  const cwd = join(root, "workspace");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const settingsPath = join(agentDir, "settings.json");
  const modelsPath = join(agentDir, "models.json");
  let baseUrl = opts.baseUrl ?? "http://127.0.0.1:9/v1";

  const m = opts.model ?? {};
  const api = m.api ?? "openai-completions";
  const modelId = m.id ?? MOCK_MODEL_ID;
  const reasoning = m.reasoning ?? (api === "anthropic-messages" ? true : undefined);
  const writeModels = () => {
    writeJson(modelsPath, {
      providers: {
        [MOCK_PROVIDER]: {
          // The Anthropic SDK adds `/v1/messages` to its base URL itself.
          baseUrl: api === "anthropic-messages" ? baseUrl.replace(/\/v1\/?$/, "") : baseUrl,
          api,
          apiKey: m.apiKey ?? "test-key",
          models: [
            {
              id: modelId,
              name: "Mock model",
              contextWindow: m.contextWindow ?? 32000,
              maxTokens: m.maxTokens ?? 1024,
              ...(reasoning !== undefined ? { reasoning } : {}),
              ...(m.cost ? { cost: m.cost } : {}),
              ...(m.extra ?? {}),
            },
          ],
        },
      },
    });
  };

  writeJson(settingsPath, {
    retry: { enabled: false },
    defaultProjectTrust: opts.projectTrust ?? "always",
    defaultProvider: MOCK_PROVIDER,
    defaultModel: modelId,
    ...(opts.settings ?? {}),
  });
  writeModels();
  for (const [rel, content] of Object.entries(opts.agentFiles ?? {})) {
    mkdirSync(dirname(join(agentDir, rel)), { recursive: true });
    writeFileSync(join(agentDir, rel), content);
  }

  const ws: PiWorkspace = {
    root,
    agentDir,
    cwd,
    modelRef: `${MOCK_PROVIDER}/${modelId}`,
    sessionDir: sessionDirFor(agentDir, cwd),
    get baseUrl() {
      return baseUrl;
    },
    writeFile(rel, content) {
      const p = join(cwd, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      return p;
    },
    readFile: (rel) => readFileSync(join(cwd, rel), "utf8"),
    updateSettings(patch) {
      writeJson(settingsPath, { ...ws.readSettings(), ...patch });
    },
    readSettings: () => JSON.parse(readFileSync(settingsPath, "utf8")) as Record<string, unknown>,
    writeProjectSettings(settings) {
      writeJson(join(cwd, ".pi", "settings.json"), settings);
    },
    setBaseUrl(url) {
      baseUrl = url;
      writeModels();
    },
    sessionFiles() {
      return listJsonl(join(agentDir, "sessions"))
        .map((f) => ({ f, t: statSync(f).mtimeMs }))
        .sort((a, b) => a.t - b.t)
        .map((x) => x.f);
    },
    findSessionFile(sessionId) {
      const files = ws.sessionFiles();
      if (sessionId) return files.find((f) => f.endsWith(`_${sessionId}.jsonl`));
      return files[files.length - 1];
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  for (const [rel, content] of Object.entries(opts.files ?? {})) ws.writeFile(rel, content);
  if (opts.projectSettings) ws.writeProjectSettings(opts.projectSettings);
  return ws;
}
