#!/usr/bin/env node
// UI smoke check: opens the real workbench (code-server + Chromium) on the fixture workspace with
// the extension loaded (no tests), checks the extension's commands are in the command palette,
// clicks a file in the explorer and saves a screenshot. Proves the hook later UI checks build on.
//
//   node test/vscode/ui-smoke.mjs [--out FILE.png] [--workspace DIR] [--verbose]
//
// The PNG goes to a temp path by default; never commit it.
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { launchWorkbench, waitForWorkbenchReady, findInCommandPalette, DEFAULT_EXTENSION_PATH } from "./browser.mjs";
import { buildExtension } from "./lib/build-suite.mjs";

const { values: opts } = parseArgs({
  options: {
    out: { type: "string" },
    workspace: { type: "string" },
    verbose: { type: "boolean", default: false },
  },
});
const out = opts.out ?? join(tmpdir(), `pi-pruner-ui-smoke-${Date.now()}.png`);
const say = (msg) => process.stderr.write(`[ui-smoke] ${msg}\n`);
const t0 = performance.now();

await buildExtension();
const pkg = JSON.parse(readFileSync(join(DEFAULT_EXTENSION_PATH, "package.json"), "utf8"));
const commands = pkg.contributes?.commands ?? [];

const overall = setTimeout(() => {
  say("timed out after 180 s");
  process.exit(124);
}, 180_000);
overall.unref();

const wb = await launchWorkbench({ workspace: opts.workspace, verbose: opts.verbose });
let code = 0;
const stopOnSignal = async () => {
  await wb.stop();
  process.exit(130);
};
process.once("SIGINT", stopOnSignal);
process.once("SIGTERM", stopOnSignal);
try {
  const { page } = wb;
  await waitForWorkbenchReady(page);
  say(`workbench up at ${wb.server.origin} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // The extension is loaded: its first contributed command is offered by the command palette.
  if (commands.length > 0) {
    const c = commands[0];
    const label = c.category ? `${c.category}: ${c.title}` : c.title;
    const { input } = await findInCommandPalette(page, label);
    say(`command palette offers "${label}"`);
    await input.press("Escape");
  }

  // Click a row of the explorer tree (rows are role=treeitem with their labels).
  const firstRow = page.getByRole("treeitem").first();
  await firstRow.waitFor({ state: "visible", timeout: 30_000 });
  const name = (await firstRow.getAttribute("aria-label")) ?? (await firstRow.innerText());
  await firstRow.click();
  say(`clicked explorer row "${name}"`);
  await page.locator(".editor-group-container .monaco-editor, .editor-group-container .monaco-workbench-editor").first().waitFor({ state: "visible", timeout: 30_000 }).catch(() => {});

  await page.screenshot({ path: out });
  say(`screenshot: ${out}`);
} catch (e) {
  code = 1;
  say(`failed: ${e.message}`);
  await wb.page.screenshot({ path: out }).then(() => say(`screenshot of the failure: ${out}`), () => {});
} finally {
  await wb.stop();
}
say(`${code === 0 ? "ok" : "FAILED"} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
process.exit(code);
