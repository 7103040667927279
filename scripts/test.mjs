// `npm test`: every test of the project, in order, with one closing count.
// Build → type-check → vitest (unit, property and real-Pi end-to-end) → VS Code suite in a real extension host.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const IMPORT_CHECK_ROOTS = ["core/src", "pi-extension/src", "vscode-extension/src", "test", "bench", "scripts"];
const only = process.argv.slice(2);
const results = { passed: 0, failed: 0, skipped: 0 };
let failedSteps = [];

function run(name, command, args, extraEnv = {}) {
  if (only.length && !only.includes(name)) return true;
  const started = Date.now();
  console.log(`\n── ${name}: ${[command, ...args].join(" ")}`);
  const r = spawnSync(command, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...extraEnv } });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const ok = r.status === 0;
  console.log(`── ${name}: ${ok ? "ok" : `FAILED (exit ${r.status ?? r.signal})`} in ${seconds}s`);
  if (!ok) failedSteps.push(name);
  return ok;
}

run("build", process.execPath, ["scripts/build.mjs"]);
run("typecheck", process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json", "--noEmit"]);
// The editor's sources as its tests compile them (the root check reads them as CommonJS and lets some through).
run("typecheck editor", process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "test/vscode/tsconfig.json", "--noEmit"]);
// Import rules (no circle, core layered, extensions through @pi-pruner/core): .dependency-cruiser.cjs.
run("imports", process.execPath, [join(root, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs"), ...IMPORT_CHECK_ROOTS, "--config", ".dependency-cruiser.cjs"]);
// No unused export, file or dependency anywhere (knip.json says what the entry points are).
run("unused", process.execPath, [join(root, "node_modules/knip/bin/knip.js"), "--no-progress"]);

const report = join(mkdtempSync(join(tmpdir(), "pi-pruner-test-")), "vitest.json");
run("vitest", process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`]);
if (existsSync(report)) {
  const json = JSON.parse(readFileSync(report, "utf8"));
  results.passed += json.numPassedTests ?? 0;
  results.failed += json.numFailedTests ?? 0;
  results.skipped += (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
}

if (existsSync(join(root, "test/vscode/run.mjs"))) {
  const summary = join(dirname(report), "vscode.json");
  run("vscode", process.execPath, ["test/vscode/run.mjs", "--summary", summary]);
  if (existsSync(summary)) {
    const s = JSON.parse(readFileSync(summary, "utf8"));
    results.passed += s.passed ?? 0;
    results.failed += s.failed ?? 0;
    results.skipped += s.skipped ?? 0;
  }
}

console.log(`\nsteps failed: ${failedSteps.length ? failedSteps.join(", ") : "none"}`);
console.log(`tests: ${results.passed} passed, ${results.failed} failed${results.skipped ? `, ${results.skipped} skipped` : ""}`);
process.exit(failedSteps.length || results.failed ? 1 : 0);
