// What a person reads of a session's history in the editor: sessions told apart at a glance,
// summaries by the prompt they belong to, reclaim figures that add up, the model view of the last
// request sent and of any other one, and the branch chosen kept across a reload.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { readSessionFile } from "../../../core/src/session/session-reader.ts";
import { buildRequestView } from "../../../core/src/view/request-views.ts";
import { modelViewText } from "../../../core/src/view/model-view.ts";
import { loadConfig } from "../../../core/src/settings/settings-reader.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { formatDateTime } from "../../../vscode-extension/src/text.ts";
import { SESSION_NAME_MAX } from "../../../vscode-extension/src/session-names.ts";
import {
  branchedSession,
  condenseCutSession,
  condenseSession,
  RECORDED_FINAL_ANSWER,
  RECORDED_READ,
  recordedSession,
  rewoundSession,
  TWIN_PROMPT,
  twinSessions,
  writeSession,
} from "../fixtures/sessions.ts";
import { children, closeAllEditors, extensionApi, find, installPiSession, ScriptedPrompter, sessionDirName, tempDir, tooltipText, useAgentDir, waitFor, workspaceDir, type ShownItem } from "./helpers.ts";

type Items = ShownItem<SessionNode>[];

describe("history: labels, reclaim, requests and branches", () => {
  let api: PiPrunerApi;
  let agentDir: string;
  const files: Record<string, string> = {};
  const twins: string[] = [];

  const rows = () => children(api.sessionsTree);
  const row = async (file: string) => {
    const found = (await rows()).find((s) => s.node.path === file);
    assert.ok(found, `no session row for ${file}`);
    return found;
  };
  const open = (node: SessionNode) => children(api.sessionsTree, node);

  async function activeText(match?: RegExp): Promise<string> {
    return waitFor(() => {
      const editor = vscode.window.activeTextEditor;
      const text = editor?.document.uri.scheme === "pi-pruner" ? editor.document.getText() : undefined;
      return text && (!match || match.test(text)) ? text : undefined;
    }, `a model view${match ? ` matching ${match}` : ""} in the active editor`);
  }

  before(async () => {
    api = await extensionApi();
    agentDir = tempDir("pi-pruner-history-");
    const sessionDir = path.join(agentDir, "sessions", sessionDirName(workspaceDir()));
    const cwd = workspaceDir();
    let minute = 0;
    const at = () => new Date(Date.UTC(2025, 1, 1, 9, minute++));
    for (const twin of twinSessions(cwd)) twins.push(writeSession(sessionDir, twin, at()));
    files.condense = writeSession(sessionDir, condenseSession(cwd), at());
    files.cut = writeSession(sessionDir, condenseCutSession(cwd), at());
    files.rewound = writeSession(sessionDir, rewoundSession(cwd), at());
    files.recorded = writeSession(sessionDir, recordedSession(cwd), at());
    files.branched = writeSession(sessionDir, branchedSession(cwd), at());
    files.pi = installPiSession(sessionDir);
    await useAgentDir(api, agentDir);
  });

  afterEach(async () => {
    api.setPrompter(undefined);
    await closeAllEditors();
  });

  it("a row shows the session's name, then its age and reclaim; equal names begin with what tells them apart", async () => {
    const shown = await Promise.all(twins.map(row));
    // The first two began in the same minute: the shortest id prefix (at least 8) that the other lacks; the third, when it began.
    assert.deepEqual(
      shown.map((s) => s.label),
      [`id 01944a4b-0 · ${TWIN_PROMPT}`, `id 01944a4b-8 · ${TWIN_PROMPT}`, `${formatDateTime(Date.UTC(2025, 0, 10, 14, 30))} · ${TWIN_PROMPT}`],
    );
    const ageAndReclaim = /^(\d+(s|min|h|d) ago|[A-Z][a-z]{2} \d+) · \d+(\.\d)?[kM]?→\d+(\.\d)?[kM]?$/;
    for (const s of shown) assert.match(s.description, ageAndReclaim);
    assert.match(tooltipText(shown[0]!.item), new RegExp(`^${TWIN_PROMPT}`));
    assert.match(tooltipText(shown[0]!.item), /Session id: 01944a4b-0ca0-7a1b-8c2d-111111111111/);
    // A session whose name is its own is shown by it, whole (the row cuts it where the side bar ends).
    const condense = await row(files.condense);
    assert.ok(condense.label.length <= SESSION_NAME_MAX);
    assert.match(condense.description, ageAndReclaim);
  });

  it("a summary is labelled by the prompt its calls were made for, with its calls, in plain words", async () => {
    const top = await open((await row(files.condense)).node);
    const summaries = await open(find(top, "Summaries").node);
    assert.deepEqual(
      summaries.map((s) => s.label),
      ["explain how the config loader… · 2 calls", "now check the validator · 1 call"],
    );
    assert.equal(summaries[0]!.description, "Summary t1 src/config.ts: loads the global layer, then the project layer. t2…");
    for (const s of summaries) {
      assert.doesNotMatch(`${s.label} ${s.description}`, /turn \d|---|\*\*|`|Summarized tool refs/);
    }
    assert.match(tooltipText(summaries[1]!.item), /^Summary of 1 call made for prompt 2: now check the validator/);
  });

  it("more sent than raw is flagged in the row and explained in its tooltip", async () => {
    const cut = await row(files.cut);
    assert.match(cut.description, / · \d+→\d+ · sent > raw · 1 bad line$/);
    assert.equal((cut.item.iconPath as vscode.ThemeIcon).id, "warning");
    const [raw, sent] = cut.description.split(" · ")[1]!.split("→").map(Number);
    assert.ok(sent! > raw!, cut.description);
    assert.match(
      tooltipText(cut.item),
      /More is sent than raw: the pruner's summaries \(\d+ characters\) are sent while the calls they stand for are not stubbed \(2 not on this branch\); the branch starts at entry e\d+: what came before it is not in the file/,
    );
    const summaries = await open(find(await open(cut.node), "Summaries").node);
    assert.deepEqual(
      summaries.map((s) => s.label),
      ["summary · 2 calls not on this branch"],
    );
  });

  it("a rewind that hid most of the context shows in the reclaim, and the tooltip says how much of it the rewind took", async () => {
    const rewound = await row(files.rewound);
    const reclaim = rewound.description.split(" · ")[1]!;
    const [raw, sent] = reclaim.split("→").map((x) => (x.endsWith("k") ? Number(x.slice(0, -1)) * 1000 : Number(x)));
    assert.ok(raw! > 10_000 && sent! < raw! / 20, `reclaim ${reclaim}`);
    const said = /The agent's rewinds leave ([\d,]+) characters of it out\./.exec(tooltipText(rewound.item));
    assert.ok(said, tooltipText(rewound.item));
    const rawChars = api.store.get(files.rewound)!.summary!.rawChars;
    assert.ok(Number(said[1]!.replace(/,/g, "")) > rawChars * 0.9, "the rewound span is most of the raw context");
  });

  it("the model view opens on the last request sent, as it was sent, and says so", async () => {
    const top = await open((await row(files.recorded)).node);
    const item = find(top, "Model view");
    assert.equal(item.description, "last request sent · 3 of 3");
    await vscode.commands.executeCommand(item.item.command!.command, ...(item.item.command!.arguments ?? []));
    const text = await activeText();
    assert.match(text, /^# Model view: last request sent, request 3 of 3, as it was sent$/m);
    assert.match(text, /^# for the prompt "and which is the last\?"; answered \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.$/m);
    assert.match(text, /^# rendered with the settings the session recorded before this request \(by pi-pruner 0\.1\.0\)\.$/m);
    const data = await readSessionFile(files.recorded);
    const config = loadConfig({ agentDir, cwd: workspaceDir(), projectTrusted: true }).config;
    const expected = buildRequestView(data, { config, request: 3 })!;
    assert.ok(text.endsWith(modelViewText(expected)), "the body is core's render of request 3");
    assert.match(text, /and which is the last\?/);
    assert.ok(!text.includes(RECORDED_FINAL_ANSWER), "the answer to the last request is not part of what it sent");
    assert.equal(vscode.window.tabGroups.activeTabGroup.activeTab?.label, "model view what does src-x.ts export- · last request sent.txt");
  });

  it("Go to Request… lists every request with its number, prompt and time; Previous and Next step through them to the next request", async () => {
    await vscode.commands.executeCommand("piPruner.showModelView", files.recorded);
    await activeText(/request 3 of 3/);
    const prompter = new ScriptedPrompter((items) => items.find((i) => i.label.startsWith("1. ")));
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.goToRequest");
    assert.deepEqual(prompter.picks[0]!.offered, ["Next request", "3. and which is the last?", "2. what does src/x.ts export?", "1. what does src/x.ts export?"]);
    let text = await activeText(/^# Model view: request 1 of 3, as it was sent$/m);
    assert.match(text, /what does src\/x\.ts export\?/);
    assert.doesNotMatch(text, /and which is the last\?/);

    await vscode.commands.executeCommand("piPruner.previousRequest");
    assert.deepEqual(prompter.messages.at(-1), { level: "info", text: "Pi Pruner: request 1 is the first this branch sent." });

    await vscode.commands.executeCommand("piPruner.nextRequest");
    text = await activeText(/^# Model view: request 2 of 3, as it was sent$/m);
    // Request 2 was answered after the read's summary: the read went as its stub.
    assert.match(text, /pruned: see ref `t1`/);
    await vscode.commands.executeCommand("piPruner.nextRequest");
    await activeText(/^# Model view: last request sent, request 3 of 3/m);
    await vscode.commands.executeCommand("piPruner.nextRequest");
    text = await activeText(/^# Model view: the next request/m);
    assert.ok(text.includes(RECORDED_FINAL_ANSWER), "the next request holds the leaf's final answer");
    await vscode.commands.executeCommand("piPruner.nextRequest");
    assert.equal(prompter.messages.at(-1)?.text, "Pi Pruner: this is the next request; nothing after it was sent.");
    await vscode.commands.executeCommand("piPruner.previousRequest");
    await activeText(/^# Model view: last request sent, request 3 of 3/m);

    const menus = vscode.extensions.getExtension("pi-pruner.pi-pruner-vscode")!.packageJSON.contributes.menus["editor/title"] as { command: string; when: string }[];
    assert.deepEqual(
      menus.map((m) => m.command),
      ["piPruner.previousRequest", "piPruner.goToRequest", "piPruner.nextRequest", "piPruner.compareWithPreviousRequest"],
    );
    for (const m of menus) assert.match(m.when, /piPruner\.modelViewActive/);
  });

  it("a file protected after the fact leaves the requests already sent as they were and changes the next one", async () => {
    await vscode.commands.executeCommand("piPruner.showModelView", files.recorded);
    const before = await activeText(/request 3 of 3/);
    assert.match(before, /pruned: see ref `t1`/);
    const settingsFile = path.join(workspaceDir(), ".pi", "settings.json");
    const had = fs.existsSync(settingsFile) ? fs.readFileSync(settingsFile, "utf8") : undefined;
    fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
    fs.writeFileSync(settingsFile, JSON.stringify({ contextPrune: { protectedPaths: ["**/skills/**/*.md", RECORDED_READ.path] } }, null, 2));
    try {
      await vscode.commands.executeCommand("piPruner.refresh");
      await waitFor(() => api.store.configFor(api.store.get(files.recorded)!).protectedPaths.includes(RECORDED_READ.path), "the new protection to be read");
      const lastUri = vscode.window.activeTextEditor!.document.uri;
      assert.equal(await api.documents.provideTextDocumentContent(lastUri), before, "the last request sent is shown exactly as before");
      await vscode.commands.executeCommand("piPruner.nextRequest");
      await activeText(/^# Model view: the next request/m);
      // An open document follows its session's new view within a moment.
      const next = await activeText(new RegExp(RECORDED_READ.text.slice(0, 40).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
      assert.ok(next.includes(RECORDED_READ.text), "the next request sends the now protected read whole");
      assert.doesNotMatch(next, /pruned: see ref `t1`/);
    } finally {
      if (had === undefined) fs.rmSync(settingsFile);
      else fs.writeFileSync(settingsFile, had);
      await vscode.commands.executeCommand("piPruner.refresh");
    }
  });

  it("the real-Pi session's model view of every request equals core's render of it", async () => {
    const data = await readSessionFile(files.pi);
    const config = loadConfig({ agentDir, cwd: workspaceDir(), projectTrusted: true }).config;
    const count = buildRequestView(data, { config, request: "last" })!.requestCount;
    assert.ok(count >= 3, `the real-Pi session sent ${count} requests`);
    const prompter = new ScriptedPrompter(...Array.from({ length: count }, (_, i) => (items: vscode.QuickPickItem[]) => items.find((it) => it.label.startsWith(`${i + 1}. `))));
    api.setPrompter(prompter);
    for (let n = 1; n <= count; n++) {
      await vscode.commands.executeCommand("piPruner.goToRequest", files.pi);
      const text = await activeText(new RegExp(`^# Model view: (last request sent, )?request ${n} of ${count},`, "m"));
      assert.ok(text.endsWith(modelViewText(buildRequestView(data, { config, request: n })!)), `request ${n}: the body is core's render`);
    }
  });

  it("a branch is shown by its last prompt, and the one chosen is kept when the sessions are listed again, as after a reload", async () => {
    const branchItem = async () => find(await open((await row(files.branched)).node), /^approach|^try/);
    let branch = await branchItem();
    assert.equal(branch.label, "approach B");
    assert.equal(branch.description, "branch 2 of 2 · latest");
    api.setPrompter(new ScriptedPrompter("approach A"));
    await vscode.commands.executeCommand("piPruner.chooseBranch", files.branched);
    branch = await branchItem();
    assert.equal(branch.label, "approach A");
    assert.equal(branch.description, "branch 1 of 2");

    // A reload starts from an empty store: the listing reads the choice back from the workspace's memory.
    await vscode.commands.executeCommand("piPruner.refresh");
    await api.settled();
    assert.equal((await api.store.load(files.branched))!.view!.calls.at(-1)?.command, "echo approach A");
    branch = await branchItem();
    assert.equal(branch.label, "approach A");

    api.setPrompter(new ScriptedPrompter("approach B"));
    await vscode.commands.executeCommand("piPruner.chooseBranch", files.branched);
    await vscode.commands.executeCommand("piPruner.refresh");
    await api.settled();
    assert.equal((await api.store.load(files.branched))!.pinnedLeaf, undefined, "the latest branch is followed again");
    assert.equal((await branchItem()).description, "branch 2 of 2 · latest");
  });
});
