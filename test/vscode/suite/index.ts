// Mocha entry for VS Code extension-host tests (the @vscode/test-electron convention: the host
// requires this module and awaits `run()`). Loaded by both routes: test/vscode/run.mjs
// (code-server + Chromium, offline) and test/vscode/run-electron.mjs (downloaded desktop VS Code).
//
// The runner bundles this file and every `*.test.ts` under test/vscode/suite/ into
// .vscode-test/build/suite/ (CommonJS, `vscode` and `mocha` external); run() then loads every
// compiled `*.test.cjs` / `*.test.js` next to it. BDD UI (describe/it).
//
// Environment understood (set by the runners):
//   MOCHA_GREP     only tests whose full title matches this pattern
//   MOCHA_TIMEOUT  per-test timeout in ms (default 30000: a 2-core CI machine is slow)
//   PI_PRUNER_TEST_COLORS  "1" for coloured output, else plain (mocha's own MOCHA_COLORS forces
//                  colours whenever it is set at all, so it is not used)
//   PI_PRUNER_TEST_SUMMARY  "1": print the counts as one tagged JSON line at the end (run.mjs --summary)
//   PI_PRUNER_TEST_OUTPUT_TAG  when set, console output during the run is pre-formatted and
//                  prefixed with this tag, so the code-server runner can tell the suite's output
//                  (and the extension's) from the workbench's own log, which arrive on one channel
import * as fs from "node:fs";
import * as path from "node:path";
import { format } from "node:util";
import type MochaType from "mocha";
import * as mochaModule from "mocha";

// mocha 12 is ESM with a CommonJS core; what require("mocha") returns differs by Node version
// (a namespace on Node 20/22, the constructor on Node 24). Its `Mocha` export exists in both.
const m = mochaModule as unknown as { Mocha?: typeof MochaType; default?: typeof MochaType };
const Mocha: typeof MochaType = m.Mocha ?? m.default ?? (mochaModule as unknown as typeof MochaType);

function collect(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) collect(full, out);
    else if (/\.test\.c?js$/.test(entry.name)) out.push(full);
  }
  return out.sort();
}

type ConsoleMethod = "log" | "info" | "warn" | "error" | "debug";

// VS Code's extension host defines console.* as accessors and forwards the *original* arguments,
// so a plain `console.log = …` is not seen by the workbench; redefine the properties instead.
// mocha's reporters captured console.log when mocha loaded, so route them through console again.
function tagConsole(tag: string): () => void {
  const methods: ConsoleMethod[] = ["log", "info", "warn", "error", "debug"];
  const saved = methods.map((k) => Object.getOwnPropertyDescriptor(console, k));
  for (const k of methods) {
    const original = console[k];
    Object.defineProperty(console, k, {
      configurable: true,
      enumerable: true,
      writable: true,
      value: (...args: unknown[]) => original.call(console, tag + format(...args)),
    });
  }
  const base = Mocha.reporters.Base as unknown as { consoleLog: (...args: unknown[]) => void };
  const savedConsoleLog = base.consoleLog;
  base.consoleLog = (...args: unknown[]) => console.log(...args);
  return () => {
    base.consoleLog = savedConsoleLog;
    methods.forEach((k, i) => {
      const d = saved[i];
      if (d) Object.defineProperty(console, k, d);
      else delete (console as unknown as Record<string, unknown>)[k];
    });
  };
}

export async function run(): Promise<void> {
  const tag = process.env.PI_PRUNER_TEST_OUTPUT_TAG;
  const restoreConsole = tag ? tagConsole(tag) : () => {};
  try {
    await runMocha();
  } finally {
    restoreConsole();
  }
}

async function runMocha(): Promise<void> {
  const mocha = new Mocha({
    ui: "bdd",
    reporter: "spec",
    timeout: Number(process.env.MOCHA_TIMEOUT) || 30_000,
    slow: 5_000,
  });
  // an explicit call: the constructor ignores `color: false`
  (mocha as unknown as { color(on: boolean): void }).color(process.env.PI_PRUNER_TEST_COLORS === "1");
  if (process.env.MOCHA_GREP) mocha.grep(process.env.MOCHA_GREP);

  const files = collect(__dirname);
  if (files.length === 0) throw new Error(`no *.test.cjs files next to ${__filename}`);
  for (const f of files) mocha.addFile(f);

  const failures = await new Promise<number>((resolve, reject) => {
    try {
      const runner = mocha.run((n) => {
        // For `run.mjs --summary`: one tagged line with the counts, which the runner takes out of the output.
        if (process.env.PI_PRUNER_TEST_SUMMARY === "1") {
          const stats = runner.stats;
          console.log(`@@pi-pruner-summary@@${JSON.stringify({ passed: stats?.passes ?? 0, failed: stats?.failures ?? n, skipped: stats?.pending ?? 0 })}`);
        }
        resolve(n);
      });
    } catch (e) {
      reject(e);
    }
  });
  if (failures > 0) throw new Error(`${failures} test(s) failed`);
}
