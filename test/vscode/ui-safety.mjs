#!/usr/bin/env node
// Untrusted session text in the rendered workbench: what only the page can show.
// Opens code-server in Chromium with the extension and an agent dir holding two hostile sessions,
// expands them in the Sessions view, hovers their items and opens a summary and a call, then checks
// the DOM: the markup shows as text (no <script>, <img>, <iframe> or <b> made from it), no element
// links to a `command:` URI, the hovers hold no link, the editor marks no link in the summary, and a
// Ctrl+click on the summary's command link runs nothing (no terminal, the window stays).
//
//   node test/vscode/ui-safety.mjs [--out FILE.png] [--keep] [--verbose]
//
// Exit 0 every check passed, 1 a check failed (a screenshot is saved), 124 timeout.
import { join } from "node:path";
import { tmpdir } from "node:os";
import { parseArgs } from "node:util";
import { launchWorkbench, makeRunDir, provision, waitForWorkbenchReady } from "./browser.mjs";
import { buildExtension } from "./lib/build-suite.mjs";
import { importTs } from "./lib/ts-module.mjs";

const { values: opts } = parseArgs({
  options: { out: { type: "string" }, keep: { type: "boolean", default: false }, verbose: { type: "boolean", default: false } },
});
const say = (msg) => process.stderr.write(`[ui-safety] ${msg}\n`);
const overall = setTimeout(() => {
  say("timed out after 240 s");
  process.exit(124);
}, 240_000);
overall.unref();

await provision();
await buildExtension();
const { sessionDirName } = await importTs("test/vscode/fixtures/sessions.ts");
const untrusted = await importTs("test/vscode/fixtures/untrusted.ts");
const root = makeRunDir("pi-pruner-ui-safety-");
const agentDir = join(root, "agent");

const checks = [];
const check = (ok, what) => {
  checks.push({ ok, what });
  say(`${ok ? "ok  " : "FAIL"} ${what}`);
};

let wb;
try {
  wb = await launchWorkbench({ env: { PI_CODING_AGENT_DIR: agentDir }, verbose: opts.verbose, keep: opts.keep });
  const { page } = wb;
  // The sessions go in once the workspace's path is known (its session folder is named after it).
  untrusted.writeEditorHostile(join(agentDir, "sessions", sessionDirName(wb.workspace)), wb.workspace);
  await waitForWorkbenchReady(page);

  const sessionsView = ".pane:has(.pane-header[aria-label^='Sessions'])";
  const row = (label) => page.locator(`${sessionsView} .monaco-list-row`).filter({ hasText: label }).first();
  const container = page.locator(".activitybar .action-item a[aria-label^='Pi Pruner']").first();
  const session = row("Untrusted red");
  for (let i = 0; i < 30 && !(await session.isVisible().catch(() => false)); i++) {
    await container.click().catch(() => {});
    await session.waitFor({ state: "visible", timeout: 2000 }).catch(() => {});
  }
  await session.waitFor({ state: "visible", timeout: 5000 });
  const expand = async (r) => {
    for (let i = 0; i < 10 && (await r.getAttribute("aria-expanded")) !== "true"; i++) {
      await r.locator(".monaco-tl-twistie").click().catch(() => {});
      await page.waitForFunction((el) => el?.getAttribute("aria-expanded") === "true", await r.elementHandle(), { timeout: 2000 }).catch(() => {});
    }
  };
  await expand(session);
  await expand(row("Summaries"));
  await expand(row("turn 1 · 3 calls"));
  await row("read ../../../../../../etc/passwd").waitFor({ state: "visible", timeout: 10_000 });

  // The tree as rendered: labels with their markup as text.
  const label = (await session.innerText()).split("\n")[0];
  check(label.includes("<script>alert(1)</script>") && !label.includes("\u001b") && !label.includes("[31m"), `session label shows markup as text, escapes removed: ${JSON.stringify(label)}`);

  const dom = () =>
    page.evaluate(() => ({
      commandLinks: [...document.querySelectorAll("a[href], [data-href]")].map((a) => a.getAttribute("href") ?? a.getAttribute("data-href")).filter((h) => /^command:(?!piPruner\.)/i.test(h ?? "")),
      injected: [...document.querySelectorAll("script:not([src]), img[src='x'], iframe, b")]
        .filter((el) => !el.closest("head") && /alert|evil|bold/.test(el.outerHTML))
        .map((el) => el.outerHTML.slice(0, 80)),
      alerts: window.__alerts ?? 0,
    }));
  await page.evaluate(() => {
    window.__alerts = 0;
    window.alert = () => (window.__alerts += 1);
  });

  // Hovers: the session and the summary tooltips (untrusted text inside) hold no link.
  const hoverLinks = [];
  for (const target of [session, row("turn 1 · 3 calls"), row("read ../../../../../../etc/passwd")]) {
    await target.hover();
    const hover = page.locator(".monaco-hover:visible, .workbench-hover:visible").first();
    const shown = await hover.waitFor({ state: "visible", timeout: 6000 }).then(() => true, () => false);
    if (shown) {
      hoverLinks.push(...(await hover.evaluate((el) => [...el.querySelectorAll("a")].map((a) => a.getAttribute("href") ?? a.getAttribute("data-href") ?? a.textContent))));
      say(`hover: ${JSON.stringify((await hover.innerText()).slice(0, 120))}`);
    } else say("no hover appeared (not checked for this row)");
    await page.mouse.move(5, 5);
    await hover.waitFor({ state: "hidden", timeout: 3000 }).catch(() => {});
  }
  check(hoverLinks.length === 0, `hovers hold no link (${JSON.stringify(hoverLinks)})`);

  // The summary, opened by a click: plain text in the editor, no link marked, Ctrl+click runs nothing.
  await row("turn 1 · 3 calls").locator(".label-name").first().click();
  const lines = page.locator(".editor-instance .view-lines").first();
  await lines.filter({ hasText: "command:workbench.action.terminal.new" }).waitFor({ timeout: 15_000 });
  // Links the editor marks (underlined on Ctrl+hover): web addresses in plain text are, as in any
  // text file (VS Code asks before opening one); a command: or file: link must never be.
  const marked = async () => {
    await page.waitForTimeout(1000); // the editor computes its links shortly after it renders
    return page.locator(".editor-instance .detected-link").allInnerTexts();
  };
  const unsafe = (texts) => texts.filter((t) => !/^https?:\/\//.test(t));
  const summaryLinks = await marked();
  check(unsafe(summaryLinks).length === 0, `the summary editor marks no command or file link (marked: ${JSON.stringify(summaryLinks)})`);
  const language = (await page.locator("#status\\.editor\\.mode").first().innerText().catch(() => "?")).trim();
  check(/plain ?text/i.test(language), `the summary opens as ${language}`);
  const terminalsBefore = await page.locator(".terminal-tabs-entry, .single-terminal-tab").count();
  const link = lines.locator("span", { hasText: "command:workbench.action.terminal.new" }).last();
  await link.click({ modifiers: ["Control"] }).catch(() => {});
  await page.waitForTimeout(1500); // a command, had it run, would show its terminal by now
  const terminalsAfter = await page.locator(".terminal-tabs-entry, .single-terminal-tab, .integrated-terminal:visible").count();
  check(terminalsAfter === terminalsBefore, `Ctrl+click on the summary's command link opened no terminal (${terminalsBefore} → ${terminalsAfter})`);

  // A call's document: the markup and the 10,000 lines show as text.
  await row("read ../../../../../../etc/passwd").locator(".label-name").first().click();
  await page.locator(".editor-instance .view-lines", { hasText: "<script>alert('x')</script>" }).first().waitFor({ timeout: 15_000 });
  const callLinks = await marked();
  check(unsafe(callLinks).length === 0, `the call's document marks no command or file link (marked: ${JSON.stringify(callLinks)})`);

  const after = await dom();
  check(after.commandLinks.length === 0, `no element links to a foreign command: URI (${JSON.stringify(after.commandLinks)})`);
  check(after.injected.length === 0, `no element made from session markup (${JSON.stringify(after.injected)})`);
  check(after.alerts === 0, "no script ran (alert never called)");
  check(await page.locator(".monaco-workbench").isVisible(), "the workbench is still there (workbench.action.quit did not run)");

  const png = opts.out ?? join(tmpdir(), "pi-pruner-ui-safety.png");
  await page.screenshot({ path: png });
  say(`screenshot ${png}`);
} catch (error) {
  check(false, `the check broke: ${error.stack ?? error}`);
  if (wb?.page) await wb.page.screenshot({ path: join(tmpdir(), "pi-pruner-ui-safety-failure.png") }).catch(() => {});
} finally {
  await wb?.stop();
  if (!opts.keep) (await import("node:fs")).rmSync(root, { recursive: true, force: true });
}
const failed = checks.filter((c) => !c.ok).length;
say(`${checks.length - failed} of ${checks.length} checks passed`);
process.exit(failed ? 1 : 0);
