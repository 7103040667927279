// What a user installs, from its packed form. The Pi package's tarball (`npm pack`) is installed into
// an empty folder the way Pi installs packages (npm with --legacy-peer-deps: Pi provides its host
// packages), offline with an empty cache, so the install cannot lean on the workspace or the network.
// From there its `pi-pruner` command runs and the real `pi` loads it; the VSIX is packed by the
// command `npm run package` runs and must hold only what the editor runs.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startModelServer, type ModelServer } from "../helpers/model-server.ts";
import { createPiWorkspace, type PiWorkspace } from "../helpers/pi-workspace.ts";
import { BIN_DIR, REPO_ROOT } from "../helpers/pi-process.ts";
import { runPi } from "../helpers/run-pi.ts";
import { agentRequests, goodSummary, isSummarizerRequest, toolMessages } from "../helpers/pruner-e2e.ts";
import { expectRequestViewsMatch } from "../helpers/request-equality.ts";
import { prunedSessionBuilder } from "../helpers/fixtures.ts";

const PI_PACKAGE_SOURCE = join(REPO_ROOT, "pi-extension");
const VSCODE_PACKAGE_SOURCE = join(REPO_ROOT, "vscode-extension");

/** A user's environment: nothing npm set for the test run itself, Node 22 first on PATH. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("npm_")) env[k] = v;
  env.PATH = `${BIN_DIR}:${process.env.PATH ?? ""}`;
  return env;
}

function run(command: string, args: string[], cwd: string, options: { shell?: boolean } = {}) {
  const r = spawnSync(command, args, { cwd, env: userEnv(), encoding: "utf8", shell: options.shell, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The names in a zip archive, from its central directory (a VSIX is a zip). */
function zipEntryNames(file: string): string[] {
  const zip = readFileSync(file);
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error(`${file} is not a zip archive`);
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`bad central directory entry in ${file}`);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    names.push(zip.toString("utf8", at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return names;
}

let temp: string;
let packedFiles: string[];
let installRoot: string;
let installedPackage: string;
let installedBin: string;

beforeAll(() => {
  temp = realpathSync(mkdtempSync(join(tmpdir(), "pi-pruner-pack-")));
  const pack = run("npm", ["pack", "--json", "--pack-destination", temp], PI_PACKAGE_SOURCE);
  expect(pack.code, pack.stderr).toBe(0);
  const [packed] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  packedFiles = packed!.files.map((f) => f.path).sort();

  installRoot = join(temp, "install");
  const install = run(
    "npm",
    ["install", join(temp, packed!.filename), "--prefix", installRoot, "--legacy-peer-deps", "--no-audit", "--no-fund", "--offline", "--cache", join(temp, "empty-cache")],
    temp,
  );
  expect(install.code, install.stderr).toBe(0);
  installedPackage = join(installRoot, "node_modules", "pi-pruner");
  installedBin = join(installRoot, "node_modules", ".bin", "pi-pruner");
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

describe("the Pi package as a user installs it", () => {
  it("the tarball holds the extension bundle, the command line and its manifest, nothing else", () => {
    expect(packedFiles).toEqual(["bin/pi-pruner.js", "dist/cli.js", "dist/index.js", "package.json"]);
    const manifest = JSON.parse(readFileSync(join(installedPackage, "package.json"), "utf8"));
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.bin).toEqual({ "pi-pruner": "./bin/pi-pruner.js" });
  });

  it("installing it brings only the package itself, and the pi-pruner command", () => {
    expect(readdirSync(join(installRoot, "node_modules")).filter((n) => !n.startsWith(".")).sort()).toEqual(["pi-pruner"]);
    expect(existsSync(join(installedPackage, "node_modules"))).toBe(false);
    const help = run(installedBin, ["--help"], temp);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain("pi-pruner inspect <session.jsonl>");
    expect(help.stdout).toContain("pi-pruner protect <glob>");
  });

  it("the installed pi-pruner inspects a session the pruner worked on", () => {
    const file = prunedSessionBuilder().writeTo(join(temp, "session.jsonl"));
    const inspect = run(installedBin, ["inspect", file], temp);
    expect(inspect.code, inspect.stderr).toBe(0);
    expect(inspect.stdout).toContain("Session s-view");
    expect(inspect.stdout).toContain("Tool calls: 4");
    expect(inspect.stdout).toMatch(/t2\s+read\s+summarized/);
    expect(inspect.stdout).toContain("Summaries: 1");
    expect(inspect.stdout).toContain("skills/gate/SKILL.md");
  });

  it("the real pi loads the installed package: it prunes and serves context_tree_query", async () => {
    server = await startModelServer();
    server.route(isSummarizerRequest, goodSummary);
    server.route(() => true, [
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
      { text: "read it" },
      { toolCalls: [{ name: "context_tree_query", arguments: { toolCallIds: ["t1"] } }] },
      { text: "recovered" },
    ]);
    // A flush on the first final reply of this small session (cacheAware off), to see the package prune.
    ws = createPiWorkspace({
      baseUrl: server.baseUrl,
      files: { "a.txt": Array.from({ length: 200 }, (_, i) => `line ${i}: some source text`).join("\n") },
      settings: { contextPrune: { cacheAware: false } },
    });
    const result = await runPi({ workspace: ws, extension: installedPackage, prompts: ["read a", "again"], timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/Extension error|Cannot find/);
    const requests = agentRequests(server.requests);
    expect(requests[0]!.toolNames).toContain("context_tree_query");
    const last = toolMessages(requests.at(-1)!.body);
    expect(last[0]!.text).toContain("`t1`");
    expect(last[1]!.text).toContain("## t1 — read");
    expect(last[1]!.text).toContain("line 199: some source text");
    // The installed package records its settings as the sources do: every request's view is what was sent.
    await expectRequestViewsMatch(result.sessionFile!, requests);
  });
});

describe("the VS Code extension as packed", () => {
  it("the VSIX from `npm run package`'s command holds the bundles (the extension, the timeline's webview), its manifest, the icon and the docs only", () => {
    const script = (JSON.parse(readFileSync(join(VSCODE_PACKAGE_SOURCE, "package.json"), "utf8")) as { scripts: { package: string } }).scripts.package;
    // The script builds, then packs; the build already ran for the whole suite, so only the pack step runs here.
    const packCommand = script.split("&&").at(-1)!.trim();
    expect(packCommand).toMatch(/^vsce package /);
    const vsix = join(temp, "pi-pruner.vsix");
    const pack = run(`${packCommand} --out '${vsix}'`, [], VSCODE_PACKAGE_SOURCE, { shell: true });
    expect(pack.code, pack.stderr + pack.stdout).toBe(0);
    expect(zipEntryNames(vsix).sort()).toEqual([
      "[Content_Types].xml",
      "extension.vsixmanifest",
      "extension/LICENSE.txt",
      "extension/changelog.md",
      "extension/dist/extension.cjs",
      "extension/dist/timeline/timeline-view.css",
      "extension/dist/timeline/timeline-view.js",
      "extension/media/pi-pruner.svg",
      "extension/package.json",
      "extension/readme.md",
    ]);
  });
});
