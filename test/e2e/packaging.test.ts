// What a user installs, from its packed form. The Pi package's tarball (`npm pack`) is installed by
// Pi's own installer (`pi install npm:pi-pruner@file:<tarball>`: the npm route a published name
// takes, with the tarball standing in for the registry) into a temporary agent dir, offline with an
// empty npm cache, so nothing can come from the network or the workspace. A session of the real `pi`
// then loads it from its settings, without `-e`. A checkout's folder installs as a local package.
// The VSIX is packed by the command `npm run package` runs and must hold only what the editor runs,
// with what the Marketplace shows (icon, README, CHANGELOG, LICENSE, links).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateRawSync } from "node:zlib";
import { startModelServer, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { BIN_DIR, PI_BIN, REPO_ROOT, piEnv } from "../helpers/pi-process.ts";
import { runPi } from "../helpers/run-pi.ts";
import { agentRequests, goodSummary, isSummarizerRequest, toolMessages } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";
import { prunedSessionBuilder } from "../helpers/fixtures.ts";

const PI_PACKAGE_SOURCE = join(REPO_ROOT, "pi-extension");
const VSCODE_PACKAGE_SOURCE = join(REPO_ROOT, "vscode-extension");
/** The public repository every manifest names (assumed: the checkout has no remote to read it from). */
const REPOSITORY = "https://github.com/pi-pruner/pi-pruner";
const RAW_IMAGES = `https://raw.githubusercontent.com/pi-pruner/pi-pruner/main/docs/images/`;

/** A user's environment: nothing npm set for the test run itself, Node 22 first on PATH. */
function userEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) if (!k.startsWith("npm_")) env[k] = v;
  env.PATH = `${BIN_DIR}:${process.env.PATH ?? ""}`;
  return env;
}

function run(command: string, args: string[], cwd: string, options: { shell?: boolean; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(command, args, { cwd, env: options.env ?? userEnv(), encoding: "utf8", shell: options.shell, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * `pi <args>` in a workspace's agent dir, as a user runs it, but with npm offline and its cache
 * empty: an install that needed the registry would fail here.
 */
function piCommand(ws: PiWorkspace, args: string[], npmCache: string) {
  const env = userEnv(piEnv(ws));
  env.npm_config_offline = "true";
  env.npm_config_cache = npmCache;
  return run(PI_BIN, args, ws.cwd, { env });
}

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  localHeader: number;
}

/** The entries of a zip archive, from its central directory (a VSIX is a zip). */
function zipEntries(zip: Buffer): ZipEntry[] {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error("not a zip archive");
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error("bad central directory entry");
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    entries.push({
      name: zip.toString("utf8", at + 46, at + 46 + nameLength),
      method: zip.readUInt16LE(at + 10),
      compressedSize: zip.readUInt32LE(at + 20),
      localHeader: zip.readUInt32LE(at + 42),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** One file of a zip archive, stored or deflated. */
function zipRead(zip: Buffer, name: string): Buffer {
  const entry = zipEntries(zip).find((e) => e.name === name);
  if (!entry) throw new Error(`${name} is not in the archive`);
  const at = entry.localHeader;
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  const data = zip.subarray(start, start + entry.compressedSize);
  if (entry.method === 0) return Buffer.from(data);
  if (entry.method === 8) return inflateRawSync(data);
  throw new Error(`${name}: compression method ${entry.method}`);
}

/** Width and height of a PNG, from its IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  expect(png.toString("ascii", 12, 16)).toBe("IHDR");
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

interface Manifest {
  name: string;
  repository?: { type: string; url: string; directory?: string };
  homepage?: string;
  bugs?: { url: string };
  keywords?: string[];
  dependencies?: Record<string, string>;
  bin?: Record<string, string>;
  pi?: { extensions?: string[]; image?: string };
  icon?: string;
  extensionKind?: string[];
}

const readManifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;

/** `git+https://host/owner/name.git` → `https://host/owner/name`. */
const repositoryUrl = (m: Manifest) => m.repository?.url.replace(/^git\+/, "").replace(/\.git$/, "");

let temp: string;
let tarball: string;
let packedFiles: string[];

beforeAll(() => {
  temp = realpathSync(mkdtempSync(join(tmpdir(), "pi-pruner-pack-")));
  const pack = run("npm", ["pack", "--json", "--pack-destination", temp], PI_PACKAGE_SOURCE);
  expect(pack.code, pack.stderr).toBe(0);
  const [packed] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(temp, packed!.filename);
  packedFiles = packed!.files.map((f) => f.path).sort();
});

afterAll(() => {
  if (temp) rmSync(temp, { recursive: true, force: true });
});

let server: ModelServer | undefined;
let ws: PiWorkspace | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  ws?.cleanup();
  ws = undefined;
});

/** A small session that prunes on its first final reply and recovers the read with context_tree_query. */
async function prunedSession(options: { installed: (workspace: PiWorkspace) => void }) {
  server = await startModelServer();
  server.route(isSummarizerRequest, goodSummary);
  server.route(() => true, [
    { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
    { text: "read it" },
    { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t1"] } }] },
    { text: "recovered" },
  ]);
  // cacheAware off: this short session flushes on its first final reply, so the package's pruning shows.
  ws = createPiWorkspace({
    baseUrl: server.baseUrl,
    files: { "a.txt": Array.from({ length: 200 }, (_, i) => `line ${i}: some source text`).join("\n") },
    settings: { contextPrune: { cacheAware: false } },
  });
  options.installed(ws);
  // No `extension`: Pi loads the pruner from the packages its settings name.
  const result = await runPi({ workspace: ws, prompts: ["read a", "again"], timeoutMs: 30_000 });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).not.toMatch(/Extension error|Cannot find|Failed to load/);
  const requests = agentRequests(server.requests);
  expect(requests).toHaveLength(4);
  expect(requests[0]!.toolNames).toContain("context_tree_query");
  const last = toolMessages(requests.at(-1)!.body);
  // The read is sent as its stub; the query's answer brings the original output back.
  expect(last[0]!.text).toContain("`t1`");
  expect(last[0]!.text).not.toContain("line 150: some source text");
  expect(last[1]!.text).toContain("## t1 — read");
  expect(last[1]!.text).toContain("line 199: some source text");
  await expectRequestViewsMatch(result.sessionFile!, requests);
}

describe("the Pi package as a user installs it", () => {
  it("the tarball holds the extension bundle, the command line, its README, LICENSE and manifest, nothing else", () => {
    expect(packedFiles).toEqual(["LICENSE", "README.md", "bin/pi-pruner.js", "dist/cli.js", "dist/index.js", "package.json"]);
    const manifest = readManifest(PI_PACKAGE_SOURCE);
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.bin).toEqual({ "pi-pruner": "./bin/pi-pruner.js" });
    expect(manifest.keywords).toContain("pi-package");
    expect(manifest.pi?.extensions).toEqual(["./dist/index.js"]);
    expect(readFileSync(join(PI_PACKAGE_SOURCE, "LICENSE"), "utf8")).toBe(readFileSync(join(REPO_ROOT, "LICENSE"), "utf8"));
  });

  it("its gallery image and the README's screenshots are URLs of pictures the repository holds", () => {
    const image = readManifest(PI_PACKAGE_SOURCE).pi?.image ?? "";
    const readme = readFileSync(join(PI_PACKAGE_SOURCE, "README.md"), "utf8");
    const pictures = [image, ...[...readme.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]!)];
    expect(pictures.length).toBeGreaterThanOrEqual(3);
    for (const url of pictures) {
      // The npm page and Pi's gallery show the README away from the repository: only absolute URLs work there.
      expect(url.startsWith(RAW_IMAGES), url).toBe(true);
      expect(existsSync(join(REPO_ROOT, "docs", "images", url.slice(RAW_IMAGES.length))), url).toBe(true);
    }
  });

  it("the README installs by name first, then from a checkout, and says why not from git", () => {
    const readme = readFileSync(join(PI_PACKAGE_SOURCE, "README.md"), "utf8");
    const installs = [...readme.matchAll(/^pi install (\S+)/gm)].map((m) => m[1]);
    expect(installs).toEqual(["npm:pi-pruner", "./pi-extension"]);
    expect(readme).toContain("`pi install git:github.com/pi-pruner/pi-pruner` is not supported");
    const rootReadme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect([...rootReadme.matchAll(/^pi install (\S+)/gm)].map((m) => m[1])).toEqual(["npm:pi-pruner", "./pi-extension"]);
  });

  it("the root, the Pi package and the VS Code extension name the same repository, homepage and issues", () => {
    const manifests = [REPO_ROOT, PI_PACKAGE_SOURCE, VSCODE_PACKAGE_SOURCE].map(readManifest);
    for (const m of manifests) {
      expect(repositoryUrl(m), m.name).toBe(REPOSITORY);
      expect(m.homepage, m.name).toBe(`${REPOSITORY}#readme`);
      expect(m.bugs?.url, m.name).toBe(`${REPOSITORY}/issues`);
    }
    expect(manifests.map((m) => m.repository?.directory)).toEqual([undefined, "pi-extension", "vscode-extension"]);
  });

  it("pi install npm:… installs the tarball into the agent dir's npm folder offline, with the pi-pruner command", () => {
    ws = createPiWorkspace();
    const source = `npm:pi-pruner@file:${tarball}`;
    const install = piCommand(ws, ["install", source], join(temp, "empty-cache-1"));
    expect(install.code, install.stderr + install.stdout).toBe(0);
    expect(ws.readSettings().packages).toEqual([source]);
    // The settings Pi had are kept beside the package it added.
    expect(ws.readSettings().defaultProvider).toBe("mock");

    const npmRoot = join(ws.agentDir, "npm", "node_modules");
    // Pi's peers stay out (Pi provides them) and the package has no dependencies: only itself is installed.
    expect(readdirSync(npmRoot).filter((n) => !n.startsWith(".")).sort()).toEqual(["pi-pruner"]);
    expect(existsSync(join(npmRoot, "pi-pruner", "node_modules"))).toBe(false);
    expect(readFileSync(join(npmRoot, "pi-pruner", "README.md"), "utf8")).toContain("pi install npm:pi-pruner");

    const list = piCommand(ws, ["list"], join(temp, "empty-cache-1"));
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(source);

    const bin = join(npmRoot, ".bin", "pi-pruner");
    const help = run(bin, ["--help"], temp);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain("pi-pruner inspect <session.jsonl>");
    const file = prunedSessionBuilder().writeTo(join(temp, "session.jsonl"));
    const inspect = run(bin, ["inspect", file], temp);
    expect(inspect.code, inspect.stderr).toBe(0);
    expect(inspect.stdout).toContain("Session s-view");
    expect(inspect.stdout).toMatch(/t2\s+read\s+summarized/);
    expect(inspect.stdout).toContain("skills/gate/SKILL.md");
  });

  it("a session of the real pi uses the package pi install put there: it prunes and serves context_tree_query", async () => {
    await prunedSession({
      installed(workspace) {
        const install = piCommand(workspace, ["install", `npm:pi-pruner@file:${tarball}`], join(temp, "empty-cache-2"));
        expect(install.code, install.stderr + install.stdout).toBe(0);
      },
    });
  });

  it("a checkout's pi-extension folder installs as a local package, and a session uses it", async () => {
    await prunedSession({
      installed(workspace) {
        const install = piCommand(workspace, ["install", PI_PACKAGE_SOURCE], join(temp, "empty-cache-3"));
        expect(install.code, install.stderr + install.stdout).toBe(0);
        // A local package is loaded where it is: nothing is copied into the agent dir.
        expect(workspace.readSettings().packages).toHaveLength(1);
        expect(existsSync(join(workspace.agentDir, "npm"))).toBe(false);
      },
    });
  });
});

describe("the VS Code extension as packed", () => {
  let vsix: Buffer;
  beforeAll(() => {
    const script = (JSON.parse(readFileSync(join(VSCODE_PACKAGE_SOURCE, "package.json"), "utf8")) as { scripts: { package: string } }).scripts.package;
    // The script builds, then packs; the build already ran for the whole suite, so only the pack step runs here.
    const packCommand = script.split("&&").at(-1)!.trim();
    expect(packCommand).toMatch(/^vsce package /);
    const out = join(temp, "pi-pruner.vsix");
    const pack = run(`${packCommand} --out '${out}'`, [], VSCODE_PACKAGE_SOURCE, { shell: true });
    expect(pack.code, pack.stderr + pack.stdout).toBe(0);
    vsix = readFileSync(out);
  });

  it("holds the bundles (the extension, the timeline's webview), its manifest, the icons and the docs only", () => {
    expect(zipEntries(vsix).map((e) => e.name).sort()).toEqual([
      "[Content_Types].xml",
      "extension.vsixmanifest",
      "extension/LICENSE.txt",
      "extension/changelog.md",
      "extension/dist/extension.cjs",
      "extension/dist/timeline/timeline-view.css",
      "extension/dist/timeline/timeline-view.js",
      "extension/media/icon.png",
      "extension/media/pi-pruner.svg",
      "extension/package.json",
      "extension/readme.md",
    ]);
  });

  it("the Marketplace gets its icon (a PNG of at least 128×128), README, CHANGELOG, LICENSE and links", () => {
    const manifest = zipRead(vsix, "extension.vsixmanifest").toString("utf8");
    expect(manifest).toContain("<Icon>extension/media/icon.png</Icon>");
    expect(manifest).toContain('Type="Microsoft.VisualStudio.Services.Content.Details" Path="extension/readme.md"');
    expect(manifest).toContain('Type="Microsoft.VisualStudio.Services.Content.Changelog" Path="extension/changelog.md"');
    expect(manifest).toContain('Type="Microsoft.VisualStudio.Services.Content.License" Path="extension/LICENSE.txt"');
    expect(manifest).toContain(`Id="Microsoft.VisualStudio.Services.Links.Source" Value="${REPOSITORY}.git"`);
    expect(manifest).toContain(`Id="Microsoft.VisualStudio.Services.Links.Support" Value="${REPOSITORY}/issues"`);

    const { width, height } = pngSize(zipRead(vsix, "extension/media/icon.png"));
    expect(width).toBeGreaterThanOrEqual(128);
    expect(height).toBe(width);
    expect(zipRead(vsix, "extension/LICENSE.txt").toString("utf8")).toBe(readFileSync(join(REPO_ROOT, "LICENSE"), "utf8"));
    expect(zipRead(vsix, "extension/readme.md").toString("utf8")).toContain("# Pi Pruner for VS Code");
    expect(zipRead(vsix, "extension/changelog.md").toString("utf8")).toContain("## 0.1.0");
  });

  it("runs where the workspace is (Remote SSH, WSL, Dev Containers: beside Pi's sessions)", () => {
    const packed = JSON.parse(zipRead(vsix, "extension/package.json").toString("utf8")) as Manifest;
    expect(packed.extensionKind).toEqual(["workspace"]);
    expect(packed.icon).toBe("media/icon.png");
    expect(repositoryUrl(packed)).toBe(REPOSITORY);
    const manifest = zipRead(vsix, "extension.vsixmanifest").toString("utf8");
    expect(manifest).toContain('Id="Microsoft.VisualStudio.Code.ExtensionKind" Value="workspace"');
  });
});
