// The real-Pi fixture session for the extension-host suite: a session written by our pruner inside
// the real `pi` (test/vscode/fixtures/pi-session.ts), generated once and cached under
// .vscode-test/fixtures/ by a hash of everything that shapes it (the built Pi package, Pi's version,
// the script and the test helpers it uses). About 3 s to generate.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, localDir } from "./provision.mjs";

const INPUTS = [
  "pi-extension/dist/index.js",
  "node_modules/@earendil-works/pi-coding-agent/package.json",
  "test/vscode/fixtures/pi-session.ts",
  "test/helpers/pi-workspace.ts",
  "test/helpers/pi-process.ts",
  "test/helpers/run-pi.ts",
  "test/helpers/pi-rpc.ts",
  "test/helpers/jsonl-records.ts",
  "test/helpers/model-server.ts",
  "test/helpers/pruner-e2e.ts",
  "test/fixtures/pi/big-output-tool.ts",
];

function inputsHash() {
  const hash = createHash("sha1");
  for (const rel of INPUTS) {
    const file = join(repoRoot, rel);
    hash.update(rel);
    hash.update(existsSync(file) ? readFileSync(file) : "missing");
  }
  return hash.digest("hex").slice(0, 16);
}

/** Returns { dir, generated }: `dir` holds session.jsonl, the blobs folder and source.json. */
export async function piSessionFixture() {
  const dir = join(localDir, "fixtures", `pi-session-${inputsHash()}`);
  if (existsSync(join(dir, "session.jsonl")) && existsSync(join(dir, "source.json"))) return { dir, generated: false };
  // Generated beside its final place and renamed, so parallel runs never see half a fixture.
  const temp = `${dir}.tmp-${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  // Pi needs Node >= 22.19 and the script is TypeScript: the repository's Node 22 runs it.
  const node = join(repoRoot, "node_modules", ".bin", "node");
  let stderr = "";
  const code = await new Promise((resolve, reject) => {
    const child = spawn(node, [join(repoRoot, "test", "vscode", "fixtures", "pi-session.ts"), temp], {
      cwd: repoRoot,
      stdio: ["ignore", "ignore", "pipe"],
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
    child.on("error", reject);
    child.on("exit", (c, signal) => {
      clearTimeout(timer);
      resolve(c ?? signal);
    });
  });
  if (code !== 0 || !existsSync(join(temp, "session.jsonl"))) {
    rmSync(temp, { recursive: true, force: true });
    throw new Error(`test/vscode/fixtures/pi-session.ts failed (${code}): ${stderr.trim()}`);
  }
  try {
    renameSync(temp, dir);
  } catch {
    // Another run got there first; its fixture is the same.
    rmSync(temp, { recursive: true, force: true });
  }
  return { dir, generated: true };
}
