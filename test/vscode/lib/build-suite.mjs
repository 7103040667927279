// Builds what the extension host loads: the extension (scripts/build.mjs) and the mocha suite
// (test/vscode/suite/**/*.ts -> .vscode-test/build/suite/**/*.cjs, CommonJS, `vscode` and `mocha`
// external; mocha resolves from the repo's node_modules since .vscode-test/ sits in the repo).
import { spawn } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { build } from "esbuild";
import { repoRoot, localDir } from "./provision.mjs";

export const suiteSrcDir = join(repoRoot, "test", "vscode", "suite");

export function suiteOutDir() {
  return join(localDir, "build", "suite");
}

function findTests(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) findTests(full, out);
    else if (e.name.endsWith(".test.ts")) out.push(full);
  }
  return out.sort();
}

export async function buildExtension() {
  await new Promise((res, rej) => {
    // process.execPath: the project's Node 22 (the runner runs on it)
    const child = spawn(process.execPath, [join(repoRoot, "scripts", "build.mjs"), "--quiet"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", rej);
    child.on("exit", (code) => (code === 0 ? res() : rej(new Error(`scripts/build.mjs failed (${code})`))));
  });
}

/** Returns the absolute path of the compiled test entry (index.cjs). */
export async function buildSuite() {
  const outdir = suiteOutDir();
  rmSync(outdir, { recursive: true, force: true });
  const tests = findTests(suiteSrcDir);
  if (tests.length === 0) throw new Error(`no *.test.ts under ${relative(repoRoot, suiteSrcDir)}`);
  await build({
    entryPoints: [join(suiteSrcDir, "index.ts"), ...tests],
    outdir,
    outbase: suiteSrcDir,
    outExtension: { ".js": ".cjs" },
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    external: ["vscode", "mocha"],
    // as scripts/build.mjs: jsonc-parser's UMD "main" has lazy requires esbuild cannot follow
    mainFields: ["module", "main"],
    sourcemap: "inline",
    logLevel: "warning",
  });
  return join(outdir, "index.cjs");
}
