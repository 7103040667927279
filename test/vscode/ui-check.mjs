#!/usr/bin/env node
// UI check of the extension in the real workbench (code-server + Debian's Chromium, via
// playwright-core), installed from its packaged VSIX: opens the Pi Pruner views, expands a session
// written by our pruner through the real `pi`, opens the model view and a chain review, right-clicks a
// file to protect it, checks the explorer decorations, opens a session's context timeline (hover a
// point, click it for its model view) and the timeline of a session that rewrote the cache (its
// cause marks, the cause on hover), and saves the screenshots the README shows.
//
//   node test/vscode/ui-check.mjs [--out DIR] [--unpackaged] [--keep] [--verbose]
//
//   --out DIR      where the PNGs go (default docs/images/)
//   --unpackaged   load vscode-extension/ as a development extension instead of installing the VSIX
//
// Exit: 0 every check passed, 1 a check failed (a screenshot of the failure is saved as
// vscode-failure.png in the output dir), 124 timeout.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { DEFAULT_EXTENSION_PATH, launchChromium, makeRunDir, prepareWorkspace, provision, repoRoot, startCodeServer, waitForWorkbenchReady, workbenchUrl } from "./browser.mjs";
import { buildExtension } from "./lib/build-suite.mjs";
import { piSessionFixture } from "./lib/pi-fixture.mjs";
import { importTs } from "./lib/ts-module.mjs";

const { values: opts } = parseArgs({
  options: {
    out: { type: "string" },
    unpackaged: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
  },
});
const outDir = resolve(opts.out ?? join(repoRoot, "docs", "images"));
const say = (msg) => process.stderr.write(`[ui-check] ${msg}\n`);
const t0 = performance.now();
const secs = () => ((performance.now() - t0) / 1000).toFixed(1);

const overall = setTimeout(() => {
  say("timed out after 300 s");
  process.exit(124);
}, 300_000);
overall.unref();

function run(command, args, options = {}) {
  return new Promise((res, rej) => {
    let output = "";
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", rej);
    child.on("exit", (code) => (code === 0 ? res(output) : rej(new Error(`${command} ${args.join(" ")} failed (${code}):\n${output}`))));
  });
}

// --- fixtures: a workspace, and an agent dir with sessions for it -----------------------------------
const p = await provision();
await buildExtension();
const piFixture = await piSessionFixture();
const sessions = await importTs("test/vscode/fixtures/sessions.ts");
const runDir = makeRunDir("pi-pruner-ui-");
const workspace = prepareWorkspace(runDir);
const agentDir = join(runDir, "agent");
const { sessionDir, files } = sessions.writeSuiteSessions(agentDir, workspace);
// Ages as a person would see them: minutes to days ago.
const minutesAgo = { bad: 50, branched: 180, chain: 26 * 60, pruned: 3 * 24 * 60 };
for (const [key, minutes] of Object.entries(minutesAgo)) {
  const when = new Date(Date.now() - minutes * 60_000);
  utimesSync(files[key], when, when);
}
// Sessions a person must tell apart in a narrow side bar: three begun with one prompt (two in the
// same minute), and two whose names part only past what a default-width row shows; those two ran
// the tests, and a word deep in their long outputs is what the search check looks for.
const SEARCH_WORD = "quokkaberry";
const lookAlike = [...sessions.twinSessions(workspace), ...sessions.lookAlikeSessions(workspace, SEARCH_WORD)];
// All of the same age, minutes apart: their ages cannot tell them apart.
lookAlike.forEach((session, i) => sessions.writeSession(sessionDir, session, new Date(Date.now() - 5 * 24 * 3600_000 - i * 60_000)));
// A session whose third request rewrote the cache after a flush: the compare check diffs it with the second.
const costFixture = await importTs("test/vscode/fixtures/cost-session.ts");
sessions.writeSession(sessionDir, await costFixture.costSession(workspace), new Date(Date.now() - 2 * 24 * 3600_000));
// A session whose requests rewrote the prompt cache for known reasons: the timeline check points at its cause marks.
const rewriteFixture = await importTs("test/vscode/fixtures/rewrite-session.ts");
sessions.writeSession(sessionDir, await rewriteFixture.rewriteSession(workspace), new Date(Date.now() - 3 * 3600_000));
// The session our pruner wrote through the real pi is the newest: it is the one the screenshots show first.
const piSession = sessions.installPiSession(piFixture.dir, sessionDir, workspace, new Date(Date.now() - 4 * 60_000));
say(`fixtures in ${runDir} (${secs()} s)`);

// --- the extension: packaged and installed, unless --unpackaged -------------------------------------
const extensionsDir = join(runDir, "extensions");
const userDataDir = join(runDir, "user-data");
mkdirSync(extensionsDir, { recursive: true });
if (!opts.unpackaged) {
  const vsix = join(runDir, "pi-pruner.vsix");
  await run(join(repoRoot, "node_modules", ".bin", "vsce"), ["package", "--no-dependencies", "--allow-missing-repository", "--out", vsix], { cwd: DEFAULT_EXTENSION_PATH });
  const installed = await run(p.node24, [p.csEntry, "--install-extension", vsix, "--extensions-dir", extensionsDir, "--user-data-dir", userDataDir], {
    env: { ...process.env, PATH: `${p.node24Bin}:${process.env.PATH}`, EXTENSIONS_GALLERY: "{}", XDG_CONFIG_HOME: join(runDir, "xdg", "config"), XDG_DATA_HOME: join(runDir, "xdg", "data") },
  });
  if (!/successfully installed/i.test(installed)) throw new Error(`the VSIX did not install:\n${installed}`);
  say(`packaged and installed the VSIX into code-server (${secs()} s)`);
}

let server;
let browser;
let page;
let code = 0;
const stop = async () => {
  await browser?.close().catch(() => {});
  await server?.stop();
  if (!opts.keep) rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
  else say(`kept ${runDir}`);
};
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.once(sig, async () => {
    await stop();
    process.exit(130);
  });
}

const shot = async (name) => {
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, name);
  await page.screenshot({ path });
  say(`screenshot ${path}`);
};

/** A row of a tree (views and explorer are lists of role=treeitem rows), by its visible label. */
const row = (scope, label) => page.locator(`${scope} .monaco-list-row`).filter({ has: page.locator(".label-name, .monaco-highlighted-label", { hasText: label }) }).first();

/** Clicks until `ready()` holds: a tree re-renders while it loads, and a click on a row being replaced is lost. */
async function clickUntil(locator, ready, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await locator.waitFor({ state: "visible", timeout: Math.max(1000, deadline - Date.now()) });
    await locator.click().catch(() => {});
    try {
      await ready(Math.min(3000, Math.max(500, deadline - Date.now())));
      return;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`${what}: ${e.message}`);
    }
  }
}

const expanded = (locator) => async (timeout) => {
  await page.waitForFunction((el) => el?.getAttribute("aria-expanded") === "true", await locator.elementHandle(), { timeout });
};

/** Expands a tree row by its twistie (a click on the label of an item with a command runs the command). */
async function expand(locator, what) {
  await clickUntil(locator.locator(".monaco-tl-twistie"), expanded(locator), what);
}

/** Drags the sash on the side bar's right edge to `x`. */
async function widenSideBar(x) {
  const bar = await page.locator(".part.sidebar").first().boundingBox();
  if (!bar) return;
  const edge = bar.x + bar.width;
  for (const sash of await page.locator(".monaco-sash.vertical").all()) {
    const box = await sash.boundingBox();
    if (!box || Math.abs(box.x + box.width / 2 - edge) > 8 || box.height < bar.height / 2) continue;
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width / 2, y);
    await page.mouse.down();
    await page.mouse.move(x, y, { steps: 10 });
    await page.mouse.up();
    return;
  }
  say("no sash found on the side bar's edge; the pictures keep the default width");
}

/** The text of each row of a tree drawn inside the row (before the ellipsis), label and description. */
async function visibleRowTexts(scope, level = 1) {
  return page.locator(`${scope} .monaco-list-row[aria-level='${level}']`).evaluateAll((els) =>
    els.map((el) => {
      const container = el.querySelector(".monaco-icon-label-container");
      const right = container.getBoundingClientRect().right - 8; // the ellipsis takes the last few pixels
      let visible = "";
      const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
      const range = document.createRange();
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.textContent.length; i++) {
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const box = range.getBoundingClientRect();
          if (box.width > 0 && box.right <= right) visible += node.textContent[i];
          else if (box.width > 0) return { whole: container.textContent, visible };
        }
        visible += " ";
      }
      return { whole: container.textContent, visible };
    }),
  );
}

/**
 * At the side bar's default width every session row reads differently: the text drawn inside each
 * row (before the ellipsis) is distinct, sessions begun with one prompt among them.
 */
async function checkRowsAtDefaultWidth(view, expected) {
  await page.waitForFunction(({ sel, n }) => document.querySelectorAll(`${sel} .monaco-list-row[aria-level='1']`).length >= n, { sel: view, n: expected }, { timeout: 30_000 });
  const shown = await visibleRowTexts(view);
  const width = Math.round((await page.locator(".part.sidebar").first().boundingBox()).width);
  const seen = new Map();
  for (const r of shown) {
    const text = r.visible.replace(/\s+/g, " ").trim();
    if (seen.has(text)) throw new Error(`at the default side-bar width (${width} px) two session rows read "${text}": "${seen.get(text)}" and "${r.whole}"`);
    seen.set(text, r.whole);
  }
  say(`default side-bar width ${width} px: every session row reads differently (${shown.map((r) => `"${r.visible.replace(/\s+/g, " ").trim()}"`).join(", ")})`);
}

/** The badge a file decoration puts after an explorer row's label. */
async function badgeOf(label) {
  return row(".explorer-folders-view", label).evaluate((el) => {
    for (const node of el.querySelectorAll("*")) {
      const content = getComputedStyle(node, "::after").content;
      if (content && content !== "none" && content !== "normal" && content !== '""') return { badge: content.replace(/^"|"$/g, ""), title: el.getAttribute("title") ?? node.getAttribute("title") ?? "" };
    }
    return { badge: "", title: "" };
  });
}

try {
  server = await startCodeServer({ runDir, workspace, env: { PI_CODING_AGENT_DIR: agentDir }, verbose: opts.verbose, settings: { "workbench.colorTheme": "Default Dark Modern", "diffEditor.useInlineViewWhenSpaceIsLimited": false } });
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1360, height: 820 } });
  page = await context.newPage();
  if (opts.verbose) page.on("console", (m) => process.stderr.write(`[page:${m.type()}] ${m.text()}\n`));
  await page.goto(workbenchUrl(server.origin, { workspace, extensionDevelopmentPath: opts.unpackaged ? DEFAULT_EXTENSION_PATH : undefined }), { waitUntil: "domcontentloaded" });
  await waitForWorkbenchReady(page);
  say(`workbench up (${secs()} s)`);

  // 1. The Pi Pruner container, the newest session expanded down to the calls of its summary.
  const container = page.locator(".activitybar .action-item a[aria-label^='Pi Pruner']").first();
  const sessionsView = ".pane:has(.pane-header[aria-label^='Sessions'])";
  // The row shows the first words of the session's first prompt, "read the release skill and the parser sources".
  const piRow = row(sessionsView, "read the");
  await clickUntil(container, (timeout) => piRow.waitFor({ state: "visible", timeout }), "open the Pi Pruner view");
  await checkRowsAtDefaultWidth(sessionsView, 5 + lookAlike.length);

  // Search: a word deep in a long output, shown and highlighted in its result at the default width.
  await page.keyboard.press("Control+Shift+P");
  await page.locator(".quick-input-widget input").first().fill(">Pi Pruner: Search Sessions");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Search Sessions" }).first().click();
  const query = page.locator(".quick-input-widget input").first();
  await page.waitForFunction(() => !document.querySelector(".quick-input-widget input")?.value.startsWith(">"), null, { timeout: 10_000 });
  await query.fill(SEARCH_WORD);
  await query.press("Enter");
  const searchView = ".pane:has(.pane-header[aria-label^='Search Results'])";
  const marks = page.locator(`${searchView} .monaco-list-row[aria-level='2'] .highlight`);
  await marks.first().waitFor({ state: "visible", timeout: 30_000 });
  const results = await page.locator(`${searchView} .monaco-list-row[aria-level='2']`).evaluateAll((rows) =>
    rows.map((row) => {
      const container = row.querySelector(".monaco-icon-label-container").getBoundingClientRect();
      const mark = row.querySelector(".highlight");
      const box = mark?.getBoundingClientRect();
      return { text: row.querySelector(".monaco-icon-label-container").textContent, mark: mark?.textContent ?? "", visible: !!box && box.left >= container.left && box.right <= container.right - 8 };
    }),
  );
  if (results.length !== 2) throw new Error(`the search should find the word in the two test runs, found ${JSON.stringify(results)}`);
  for (const r of results) if (r.mark !== SEARCH_WORD || !r.visible) throw new Error(`a search result should show "${SEARCH_WORD}" highlighted within the row: ${JSON.stringify(r)}`);
  const groups = await visibleRowTexts(searchView);
  if (new Set(groups.map((g) => g.visible.trim())).size !== groups.length) throw new Error(`search groups read alike: ${JSON.stringify(groups)}`);
  say(`search: "${SEARCH_WORD}" highlighted and visible in ${results.length} results (${results.map((r) => `"${r.text}"`).join(", ")}); groups ${groups.map((g) => `"${g.visible.trim()}"`).join(", ")}`);
  await shot("vscode-search.png");
  await page.keyboard.press("Control+Shift+P");
  await page.locator(".quick-input-widget input").first().fill(">Pi Pruner: Clear Search");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Clear Search" }).first().click();

  await widenSideBar(560);
  // A click on a session selects it (the status bar shows its reclaim) and expands it.
  await clickUntil(piRow, expanded(piRow), "select and expand the real-Pi session");
  const summaries = row(sessionsView, "Summaries");
  await expand(summaries, "expand Summaries");
  // A summary is labelled by the prompt its calls were made for.
  const summary = row(sessionsView, "· 3 calls");
  await expand(summary, "expand the summary");
  const other = row(sessionsView, "Pruned without a summary");
  await expand(other, "expand the spilled calls");
  const protectedCalls = row(sessionsView, "Protected calls");
  await expand(protectedCalls, "expand the protected calls");
  await row(sessionsView, "read src/lexer.ts").waitFor({ state: "visible" });
  const status = page.locator(".statusbar-item", { hasText: "→" }).first();
  await status.waitFor({ state: "visible", timeout: 15_000 });
  say(`status bar: ${(await status.innerText()).trim()}`);
  await shot("vscode-sessions.png");

  // 2. The model view of that session.
  await clickUntil(row(sessionsView, "Model view"), (timeout) => page.locator(".editor-instance .view-lines", { hasText: "Model view: last request sent" }).first().waitFor({ timeout }), "open the model view");
  await shot("vscode-model-view.png");

  // 3. A compressed chain's review: the original span beside what the model is sent.
  await piRow.locator(".monaco-tl-twistie").click(); // collapse the first session to make room
  const chainSession = row(sessionsView, "Parser refactor");
  await expand(chainSession, "expand the chain session");
  const chains = row(sessionsView, "Compressed chains");
  await expand(chains, "expand Compressed chains");
  await clickUntil(row(sessionsView, "b1"), (timeout) => page.locator(".monaco-diff-editor").first().waitFor({ state: "visible", timeout }), "open the chain review");
  await page.locator(".monaco-diff-editor .view-lines", { hasText: "the original span" }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Control+B"); // the side bar out of the way: both sides of the diff in full
  await page.locator(".part.sidebar").first().waitFor({ state: "hidden", timeout: 5000 });
  await page.waitForTimeout(500); // the diff editor re-lays out its two sides
  await shot("vscode-chain-review.png");
  await page.keyboard.press("Control+B");
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+W"); // close all editors

  // 4. The explorer: decorations, and a right-click to protect a file.
  await page.keyboard.press("Control+Shift+E");
  const explorer = ".explorer-folders-view";
  for (const folder of ["skills", "release", "src", "docs"]) {
    const r = row(explorer, folder);
    await expand(r, `expand ${folder}`);
  }
  const skill = await badgeOf("SKILL.md");
  if (skill.badge !== "P") throw new Error(`SKILL.md should carry the protected badge, has ${JSON.stringify(skill)}`);
  const parser = await badgeOf("parser.ts");
  // Scissors: a dot there reads as VS Code's unsaved-changes mark.
  if (parser.badge !== "\u2702\uFE0E") throw new Error(`parser.ts (read and pruned in the selected session) should carry ✂, has ${JSON.stringify(parser)}`);
  say(`decorations: SKILL.md ${JSON.stringify(skill.badge)}, parser.ts ${JSON.stringify(parser.badge)}`);

  const guide = row(explorer, "guide.md");
  const menuItem = page.locator(".monaco-menu .action-item", { hasText: "Pi Pruner: Add to protectedPaths" }).first();
  await clickUntil(guide, async () => {}, "select guide.md");
  for (let attempt = 0; ; attempt++) {
    await guide.click({ button: "right" });
    try {
      await menuItem.waitFor({ state: "visible", timeout: 3000 });
      break;
    } catch (e) {
      await page.keyboard.press("Escape");
      if (attempt > 5) throw new Error(`the explorer context menu never offered the command: ${e.message}`);
    }
  }
  await menuItem.hover();
  await shot("vscode-explorer-menu.png");
  await menuItem.click();
  const pick = async (label) => {
    const item = page.locator(".quick-input-list .monaco-list-row", { hasText: label }).first();
    await item.waitFor({ state: "visible", timeout: 15_000 });
    await item.click();
  };
  await pick("docs/guide.md");
  await pick("Project settings");
  const settingsFile = join(workspace, ".pi", "settings.json");
  const deadline = Date.now() + 15_000;
  while (!(existsSync(settingsFile) && readFileSync(settingsFile, "utf8").includes("docs/guide.md"))) {
    if (Date.now() > deadline) throw new Error(`${settingsFile} never got docs/guide.md`);
    await new Promise((r) => setTimeout(r, 100));
  }
  say(`right-click → Add to protectedPaths wrote ${settingsFile}`);
  const guideDeadline = Date.now() + 15_000;
  while ((await badgeOf("guide.md")).badge !== "P") {
    if (Date.now() > guideDeadline) throw new Error("guide.md never got the protected badge");
    await new Promise((r) => setTimeout(r, 100));
  }
  await row(explorer, "guide.md").hover();
  await page.waitForTimeout(300); // let the explorer finish its hover style before the picture
  await shot("vscode-explorer-decorations.png");

  // 5. The Protected Files view, with the new pattern labelled project.
  await clickUntil(container, (timeout) => page.locator(".pane-header[aria-label^='Protected Files']").first().waitFor({ state: "visible", timeout }), "open the Pi Pruner view again");
  const protectedHeader = page.locator(".pane-header[aria-label^='Protected Files']").first();
  if ((await protectedHeader.getAttribute("aria-expanded")) !== "true") await protectedHeader.click();
  const protectedView = ".pane:has(.pane-header[aria-label^='Protected Files'])";
  const pattern = row(protectedView, "docs/guide.md");
  await pattern.waitFor({ state: "visible", timeout: 15_000 });
  const skillPattern = row(protectedView, "**/skills/**/*.md");
  await expand(skillPattern, "expand the skills pattern");
  await shot("vscode-protected-files.png");

  // 6. The context timeline of the session the real pi wrote (its model has no prices: Pi reports $0
  // for every request): hover a point for its numbers, click it for its model view.
  await clickUntil(piRow, async (timeout) => {
    await page.locator(".statusbar-item", { hasText: "→" }).first().waitFor({ timeout });
    const selected = await page.locator(`${sessionsView} .monaco-list-row.selected`).first().innerText({ timeout });
    if (!selected.startsWith("read the")) throw new Error(`selected: ${selected}`);
  }, "select the real-Pi session");
  await page.keyboard.press("Control+Shift+P");
  await page.locator(".quick-input-widget input").first().fill(">Pi Pruner: Show Context Timeline");
  const timelineAsked = performance.now();
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Show Context Timeline" }).first().click();
  const timeline = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  await timeline.locator("body[data-requests] .u-over").waitFor({ state: "attached", timeout: 20_000 });
  const timelineDrawn = performance.now() - timelineAsked;
  const requests = Number(await timeline.locator("body").getAttribute("data-requests"));
  if (!(requests >= 2)) throw new Error(`the timeline should show the session's requests, shows ${requests}`);
  const over = timeline.locator(".u-over");
  const box = await over.boundingBox();
  if (!box) throw new Error("the timeline drew no chart");
  // The middle request: uPlot's cursor snaps to the nearest point.
  const target = Math.ceil(requests / 2);
  const x = box.x + (box.width * (target - 1)) / (requests - 1);
  await page.mouse.move(x, box.y + box.height / 2);
  const details = timeline.locator("#details");
  await details.filter({ hasText: `Request ${target}` }).waitFor({ timeout: 10_000 });
  // The totals are costs, never negative, and the cost axis fits the requests' costs: from $0 to a
  // little above the dearest (uPlot's default put a flat series on $0–$100).
  let dearest = 0;
  for (let n = 1; n <= requests; n++) {
    await page.mouse.move(box.x + Math.min(box.width - 1, (box.width * (n - 1)) / (requests - 1)), box.y + box.height / 2);
    const line = await details.filter({ hasText: `Request ${n}` }).locator("div", { hasText: /^Cost / }).first().innerText({ timeout: 10_000 });
    const cost = Number(/^Cost \$([\d.e-]+)/.exec(line)?.[1]);
    if (!(cost > 0)) throw new Error(`request ${n}'s cost should be a positive figure: "${line}"`);
    dearest = Math.max(dearest, cost);
  }
  const [axisMin, axisMax] = (await timeline.locator("body").getAttribute("data-cost-axis")).split(" ").map(Number);
  if (axisMin !== 0 || !(axisMax >= dearest && axisMax <= dearest * 1.5)) throw new Error(`the cost axis runs from $${axisMin} to $${axisMax}; the dearest request costs $${dearest}`);
  const totalsText = (await timeline.locator("#totals").innerText()).replace(/\s+/g, " ");
  if (/[-−]\s?\$/.test(totalsText)) throw new Error(`the timeline's totals show a negative cost: ${totalsText}`);
  say(`cost axis $0–$${axisMax.toPrecision(2)} for requests costing up to $${dearest}`);
  await page.mouse.move(x, box.y + box.height / 2);
  await details.filter({ hasText: `Request ${target}` }).waitFor({ timeout: 10_000 });
  await page.waitForTimeout(600); // the tab's hover tooltip from the palette click fades
  say(`timeline drawn ${timelineDrawn.toFixed(0)} ms after its command: ${requests} requests; ${(await timeline.locator("#totals").innerText()).replace(/\s+/g, " ")}; hover: ${(await details.innerText()).split("\n")[1]}`);
  await shot("vscode-timeline.png");
  await page.mouse.click(x, box.y + box.height / 2);
  await page.locator(".editor-instance .view-lines", { hasText: `request ${target} of ${requests}` }).first().waitFor({ timeout: 15_000 });
  say(`a click on request ${target} opened its model view`);
  // Hidden behind the model view, the page was dropped (no retainContextWhenHidden); shown again it
  // asks for the timeline the panel kept, and is drawn again.
  const reshown = performance.now();
  await page.locator(".tabs-container .tab", { hasText: "Context timeline" }).first().click();
  await page.frameLocator("iframe.webview.ready").frameLocator("#active-frame").locator("body[data-requests] .u-over").waitFor({ state: "attached", timeout: 15_000 });
  say(`the timeline shown again was drawn in ${(performance.now() - reshown).toFixed(0)} ms`);

  // 6b. The timeline of a session whose requests rewrote the prompt cache (a flush, an idle gap, a
  // model change): a mark over each of them, in view and on top, and pointing at the flush's says
  // why, with the ref it stubbed.
  await page.keyboard.press("Control+Shift+P");
  await page.locator(".quick-input-widget input").first().fill(">View: Close All Editors");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Close All Editors" }).first().click();
  if ((await piRow.getAttribute("aria-expanded").catch(() => null)) === "true") await piRow.locator(".monaco-tl-twistie").click();
  await clickUntil(row(sessionsView, "which rules"), async (timeout) => {
    const selected = await page.locator(`${sessionsView} .monaco-list-row.selected`).first().innerText({ timeout });
    if (!selected.startsWith("which rules")) throw new Error(`selected: ${selected}`);
  }, "select the session that rewrote the cache");
  await page.keyboard.press("Control+Shift+P");
  await page.locator(".quick-input-widget input").first().fill(">Pi Pruner: Show Context Timeline");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Show Context Timeline" }).first().click();
  const causesPage = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  await causesPage.locator("body[data-requests='9'] .u-over").waitFor({ state: "attached", timeout: 20_000 });
  const causeMarks = await causesPage.locator(".u-over .cause-mark").evaluateAll((els) =>
    els.map((el) => {
      const box = el.getBoundingClientRect();
      const over = el.parentElement.getBoundingClientRect();
      // The mark lets the pointer through to the chart: what is under it is the chart's overlay, not something covering it.
      const under = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
      const style = getComputedStyle(el);
      return { request: el.dataset.request, inside: box.width > 0 && box.left >= over.left && box.right <= over.right && box.top >= over.top && box.bottom <= over.bottom, onTop: under === el.parentElement && style.visibility === "visible" && Number(style.opacity) > 0 };
    }),
  );
  if (causeMarks.map((m) => m.request).join() !== "3,5,8") throw new Error(`the cause marks should be over requests 3, 5 and 8: ${JSON.stringify(causeMarks)}`);
  for (const m of causeMarks) if (!m.inside || !m.onTop) throw new Error(`request ${m.request}'s cause mark should be inside the chart and on top: ${JSON.stringify(m)}`);
  const legend = (await causesPage.locator("#marks").innerText()).replace(/\s+/g, " ");
  if (!/read from the cache.*written to it.*sent uncached.*estimate.*1 of 9.*rewrote the cache ×3/.test(legend)) throw new Error(`the legend should name the bars, the estimate and the rewrites: ${legend}`);
  const flushMark = await causesPage.locator(".u-over .cause-mark[data-request='3']").boundingBox();
  await page.mouse.move(flushMark.x + flushMark.width / 2, flushMark.y + flushMark.height * 4, { steps: 4 });
  await page.mouse.move(flushMark.x + flushMark.width / 2, flushMark.y + flushMark.height / 2, { steps: 4 });
  const causeHover = causesPage.locator("#details[data-request='3'] .cause");
  await causeHover.filter({ hasText: /Rewrote 1,510 tokens beyond the 0 added: a flush \(\w+\) stubbed t1/ }).waitFor({ state: "visible", timeout: 10_000 });
  const sinceLoad = await causesPage.locator("body").getAttribute("data-since-load-ms");
  say(`cause marks over requests ${causeMarks.map((m) => m.request).join(", ")}; hover: "${await causeHover.innerText()}"; drawn ${sinceLoad} ms after its page loaded`);
  await page.waitForTimeout(600); // the palette's tooltip fades
  await shot("vscode-timeline-causes.png");

  // 7. Compare with Previous Request, from the model view's title bar: request 3 of the cost session
  // (the flush before it stubbed the parser's output) beside request 2, at the stub.
  // Every other session collapsed: the only "Model view" row shown is the cost session's.
  const openSessions = page.locator(`${sessionsView} .monaco-list-row[aria-level='1'][aria-expanded='true']`);
  for (let left = await openSessions.count(); left > 0; left = await openSessions.count()) {
    await openSessions.first().locator(".monaco-tl-twistie").click();
    await page.waitForFunction(({ sel, n }) => document.querySelectorAll(sel).length < n, { sel: `${sessionsView} .monaco-list-row[aria-level='1'][aria-expanded='true']`, n: left }, { timeout: 10_000 });
  }
  await expand(row(sessionsView, "what does the parser"), "expand the cost session");
  const modelLines = page.locator(".editor-instance .view-lines");
  await clickUntil(row(sessionsView, "Model view"), (timeout) => modelLines.filter({ hasText: "request 4 of 4" }).first().waitFor({ timeout }), "open the cost session's model view");
  const titleAction = (label) => page.locator(`.editor-actions .action-label[aria-label='${label}']`).first();
  await clickUntil(titleAction("Previous Request"), (timeout) => modelLines.filter({ hasText: "request 3 of 4" }).first().waitFor({ timeout }), "step to request 3");
  const diff = page.locator(".monaco-diff-editor").first();
  await clickUntil(titleAction("Compare with Previous Request"), (timeout) => diff.waitFor({ state: "visible", timeout }), "compare request 3 with request 2");
  const original = diff.locator(".editor.original .view-lines");
  const modified = diff.locator(".editor.modified .view-lines");
  await original.filter({ hasText: 'parser line 1: export const rule0 = compile("rule 0");' }).waitFor({ timeout: 15_000 });
  await modified.filter({ hasText: "[read output pruned: see ref `t1`" }).waitFor({ timeout: 15_000 });
  const diffTab = (await page.locator(".tabs-container .tab.active").first().innerText()).trim();
  if (!diffTab.startsWith("Request 2 ↔ 3 — ")) throw new Error(`the diff's tab should read "Request 2 ↔ 3 — <session>", reads "${diffTab}"`);
  await page.keyboard.press("Control+B"); // the side bar out of the way: both sides of the diff in full
  await page.locator(".part.sidebar").first().waitFor({ state: "hidden", timeout: 5000 });
  await page.mouse.move(1000, 700); // off the title bar: no button's tooltip in the picture
  await page.waitForTimeout(800); // the diff editor re-lays out its two sides; a tooltip fades
  // The change is highlighted on both sides, in view: the read's output removed on the left, the stub added on the right.
  const marked = async (side, selector) =>
    diff.locator(`.editor.${side} ${selector}`).evaluateAll((els) => els.filter((el) => { const b = el.getBoundingClientRect(); return b.height > 0 && b.top >= 0 && b.bottom <= window.innerHeight; }).length);
  const removed = await marked("original", ".line-delete, .char-delete");
  const added = await marked("modified", ".line-insert, .char-insert");
  if (!(removed > 0 && added > 0)) throw new Error(`the diff should highlight the change on both sides in view: ${removed} removed, ${added} added`);
  say(`compare: "${diffTab}", ${removed} highlighted removed and ${added} added in view`);
  await shot("vscode-compare.png");
  await page.keyboard.press("Control+B");
  say(`every check passed in ${secs()} s (extension ${opts.unpackaged ? "unpackaged" : "installed from its VSIX"}; ${piSession})`);
} catch (e) {
  code = 1;
  say(`FAILED: ${e.message}`);
  if (page) await shot("vscode-failure.png").catch(() => {});
} finally {
  await stop();
}
process.exit(code);
