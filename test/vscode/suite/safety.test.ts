// Session text is untrusted: it is shown, never interpreted. No tooltip is trusted markdown or HTML,
// no item runs anything but the extension's own commands, labels carry no control or bidi
// characters, and nothing is opened or run because a session was read.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import * as vscode from "vscode";
import { firstWords } from "../../../core/src/session/labels.ts";
import { SESSION_NAME_MAX } from "../../../vscode-extension/src/session-names.ts";
import { documentUri } from "../../../vscode-extension/src/documents/document-uri.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { OPEN_DOCUMENT_COMMAND } from "../../../vscode-extension/src/command-ids.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { ANSI_SHOWN, ANSI_TEXT, BIG_LINES, MARKUP, SECRET, writeEditorHostile, type EditorHostile } from "../fixtures/untrusted.ts";
import { children, closeAllEditors, extensionApi, find, freshAgent, tooltipText, waitFor, workspaceDir, type ShownItem, type SuiteAgent } from "./helpers.ts";

const OWN_COMMANDS = /^(piPruner\.|vscode\.open$)/;

function hostileSession(cwd: string): string {
  const b = new SessionBuilder({ sessionId: "s-hostile", cwd, startTime: Date.UTC(2025, 3, 1) });
  b.raw({ type: "session_info", name: "\u202Eevil\u202C name\u0007 [click](command:workbench.action.terminal.new) <b>bold</b>" });
  b.user("please run `rm -rf /` [here](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%22%7D) <script>alert(1)</script>");
  b.toolUse("read", { path: "src/\u202Eevil.ts" }, "<img src=x onerror=alert(1)> [x](command:workbench.action.quit)", { id: "h1" });
  b.customMessage("context-prune-summary", "- `t1` read: [open](command:workbench.action.quit) <iframe src=x>", {
    toolCallRefs: [{ shortId: "t1", toolCallId: "h1" }],
    toolNames: ["read"],
    turnIndex: 1,
  });
  b.custom("context-prune-index", { toolCalls: [{ toolCallId: "h1", toolName: "read", args: { path: "src/\u202Eevil.ts" }, resultText: "x", isError: false }], refs: [{ shortId: "t1", toolCallId: "h1" }] });
  return b.toJsonl();
}

describe("untrusted session text", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  let hostile: string;
  const terminalsBefore = vscode.window.terminals.length;

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api, { withPiSession: true });
    hostile = path.join(agent.sessionDir, "2025-09-01T00-00-00-000Z_s-hostile.jsonl");
    fs.writeFileSync(hostile, hostileSession(workspaceDir()));
    await waitFor(() => api.store.get(hostile), "the hostile session to be listed");
    await api.settled();
  });

  async function everyItem(): Promise<ShownItem<SessionNode>[]> {
    const out: ShownItem<SessionNode>[] = [];
    const walk = async (node?: SessionNode) => {
      for (const child of await children(api.sessionsTree, node)) {
        out.push(child);
        if (child.item.collapsibleState !== vscode.TreeItemCollapsibleState.None) await walk(child.node);
      }
    };
    await walk();
    return out;
  }

  it("no tooltip is trusted markdown or HTML, and items run only the extension's own commands", async () => {
    const items = await everyItem();
    assert.ok(items.length > 40, `walked ${items.length} items`);
    for (const { item, label } of items) {
      const tooltip = item.tooltip;
      if (tooltip instanceof vscode.MarkdownString) {
        assert.notEqual(tooltip.isTrusted, true, `${label}: trusted tooltip`);
        assert.notEqual(tooltip.supportHtml, true, `${label}: HTML in tooltip`);
      }
      if (item.command) assert.match(item.command.command, OWN_COMMANDS, `${label}: runs ${item.command.command}`);
    }
    const status = api.status;
    await api.selectSession(hostile);
    try {
      assert.ok(status.text);
    } finally {
      await api.selectSession(undefined);
    }
  });

  it("labels and descriptions carry no control or bidirectional characters", async () => {
    const items = await everyItem();
    for (const { label, description } of items) {
      assert.doesNotMatch(label + description, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, `control characters in ${JSON.stringify(label)}`);
    }
    const session = items.find((i) => i.node.kind === "session" && i.node.path === hostile)!;
    // The row shows the name's first words; the tooltip the whole name, as text.
    assert.equal(session.label, firstWords("evil name [click](command:workbench.action.terminal.new) <b>bold</b>", SESSION_NAME_MAX));
    assert.ok(tooltipText(session.item).startsWith("evil name [click](command:workbench.action.terminal.new) <b>bold</b>\n"));
  });

  it("reading sessions opens nothing and runs nothing", async () => {
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
    await everyItem();
    await api.settled();
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.label);
    assert.deepEqual(tabs, [], "no editor was opened");
    assert.equal(vscode.window.terminals.length, terminalsBefore);
  });

  it("a summary's markdown opens as text in an editor, never rendered", async () => {
    const state = await api.store.load(hostile);
    const summary = state!.view!.summaries[0]!;
    await vscode.commands.executeCommand("piPruner.openDocument", { kind: "summary", file: hostile, entryId: summary.entryId }, "hostile summary");
    const editor = await waitFor(() => (vscode.window.activeTextEditor?.document.uri.scheme === "pi-pruner" ? vscode.window.activeTextEditor : undefined), "the summary editor");
    assert.equal(editor.document.getText(), "- `t1` read: [open](command:workbench.action.quit) <iframe src=x>\n");
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
  });
});

// ---------------------------------------------------------------------------------------------
// A session full of markup, command links, terminal escapes, a 10,000-line output
// and spill paths that point out of the blobs folder. Everything must show as inert text, and no
// file outside the session's blobs folder may be read into a document.

const NO_ESCAPES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Leftovers of an escape sequence whose ESC was dropped but whose body was not. */
const ESCAPE_LEFTOVERS = /\[\d+(?:;\d+)*m|\[[0-9;]*[HJK]|\]8;;|\]0;/;

describe("untrusted session text: markup, links, escapes, huge outputs, paths (issue 7, item 5)", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  let hostile: EditorHostile;

  before(async function () {
    api = await extensionApi();
    agent = await freshAgent(api);
    hostile = writeEditorHostile(agent.sessionDir, workspaceDir());
    await waitFor(() => api.store.get(hostile.file), "the untrusted session to be listed");
    await api.store.load(hostile.file);
    await api.settled();
  });
  afterEach(() => closeAllEditors());
  after(() => api.selectSession(undefined));

  function call(key: string) {
    const found = api.store.get(hostile.file)!.view!.calls.find((c) => c.toolCallId === key);
    assert.ok(found, `call ${key}`);
    return found;
  }

  async function openCall(callId: string): Promise<vscode.TextDocument> {
    const c = call(callId);
    const editor = (await vscode.commands.executeCommand(OPEN_DOCUMENT_COMMAND, { kind: "call", file: hostile.file, key: c.occurrenceKey }, `call ${callId}`)) as vscode.TextEditor;
    return editor.document;
  }

  async function commandLinks(doc: vscode.TextDocument): Promise<string[]> {
    // What every link provider (ours, the built-in markdown one, anyone's) offers in the editor.
    const links = ((await vscode.commands.executeCommand("vscode.executeLinkProvider", doc.uri)) as vscode.DocumentLink[] | undefined) ?? [];
    return links.filter((l) => l.target && l.target.scheme !== "http" && l.target.scheme !== "https").map((l) => `${l.target!.toString(true)} at ${doc.getText(l.range)}`);
  }

  it("tool output with HTML, script tags and command links opens as plain text, with no link to run", async () => {
    const doc = await openCall("u_markup");
    assert.equal(doc.uri.scheme, "pi-pruner");
    assert.equal(doc.languageId, "plaintext");
    const text = doc.getText();
    assert.ok(text.includes(MARKUP), "the markup is shown exactly, as text");
    assert.deepEqual(await commandLinks(doc), [], "no command or file link in the document");
  });

  it("terminal escapes are taken out whole, leaving the words, in documents, labels and tooltips", async () => {
    const doc = await openCall("u_markup");
    const text = doc.getText();
    assert.doesNotMatch(text, NO_ESCAPES);
    assert.doesNotMatch(text, ESCAPE_LEFTOVERS, "no half-removed escape sequence");
    assert.ok(text.includes(ANSI_SHOWN), `the words stay: ${JSON.stringify(text.slice(text.indexOf("FAIL") - 5, text.indexOf("FAIL") + 80))}`);
    const spilled = (await openCall("sp_good")).getText();
    assert.ok(spilled.includes(`spilled ${ANSI_SHOWN}`), "a spill file's escapes are taken out too");
    const roots = await children(api.sessionsTree);
    const session = roots.find((r) => r.node.path === hostile.file)!;
    assert.equal(session.label, "Untrusted red <script>alert(1)</script>");
    assert.ok(tooltipText(session.item).startsWith("Untrusted red <script>alert(1)</script>\n"));
    const summary = (await children(api.sessionsTree, find(await children(api.sessionsTree, session.node), "Summaries").node))[0]!;
    assert.doesNotMatch(summary.description + tooltipText(summary.item), ESCAPE_LEFTOVERS);
    assert.doesNotMatch(summary.description + tooltipText(summary.item), NO_ESCAPES);
  });

  it("a summary opens as plain text: its command links are not links", async () => {
    const summary = api.store.get(hostile.file)!.view!.summaries[0]!;
    const editor = (await vscode.commands.executeCommand(OPEN_DOCUMENT_COMMAND, { kind: "summary", file: hostile.file, entryId: summary.entryId }, "summary")) as vscode.TextEditor;
    const doc = editor.document;
    assert.ok(doc.getText().includes("[run](command:workbench.action.terminal.new)"));
    assert.deepEqual(await commandLinks(doc), [], "no command link in the summary document");
    assert.notEqual(doc.languageId, "markdown", "not handed to the markdown extension (its link provider and preview)");
  });

  it("the model view and the session's other documents offer no command link either", async () => {
    const model = (await vscode.commands.executeCommand("piPruner.showModelView", hostile.file)) as vscode.TextEditor;
    assert.ok(model.document.getText().includes("[run](command:workbench.action.terminal.new)"));
    assert.doesNotMatch(model.document.getText(), NO_ESCAPES);
    assert.deepEqual(await commandLinks(model.document), []);
  });

  it("a 10,000-line output opens whole and quickly; its item, label and tooltip stay one short line", async () => {
    const started = performance.now();
    const doc = await openCall("u_big");
    const took = performance.now() - started;
    const text = doc.getText();
    assert.ok(doc.lineCount > BIG_LINES, `${doc.lineCount} lines`);
    assert.ok(text.includes(`line ${BIG_LINES} <b>bold</b> [x](command:workbench.action.quit) ok`), "the last line, as text, escapes removed");
    assert.ok(!ESCAPE_LEFTOVERS.test(text) && !NO_ESCAPES.test(text), "no escape sequence or its remains");
    assert.deepEqual(await commandLinks(doc), []);
    console.log(`      10,000-line output (${formatBytes(text.length)}) opened in ${took.toFixed(0)} ms`);
    assert.ok(took < 10_000, `opened in ${took.toFixed(0)} ms`);
    const roots = await children(api.sessionsTree);
    const session = roots.find((r) => r.node.path === hostile.file)!;
    const summary = (await children(api.sessionsTree, find(await children(api.sessionsTree, session.node), "Summaries").node))[0]!;
    const calls = await children(api.sessionsTree, summary.node);
    const big = find(calls, /^bash cat big\.log/);
    assert.ok(big.label.length <= 80 && !big.label.includes("\n"), big.label);
    assert.ok(tooltipText(big.item).length < 2500, `tooltip of ${tooltipText(big.item).length} characters`);
    assert.ok(tooltipText(summary.item).length < 2500);
  });

  it("spill paths out of the blobs folder (.., absolute, a sibling folder, a NUL) are refused; a FIFO or a folder does not hang", async () => {
    const refusedWith: Record<string, RegExp> = {
      sp_rel_dotdot: /is outside this session's blobs folder/,
      sp_blobs_dotdot: /is outside this session's blobs folder/,
      sp_abs_dotdot: /is outside this session's blobs folder/,
      sp_abs_outside: /is outside this session's blobs folder/,
      sp_other_session: /is outside this session's blobs folder/,
      sp_prefix: /is outside this session's blobs folder/,
      sp_nul: /not a usable path/,
      sp_folder: /not a file|not a regular file/,
      sp_fifo: /not a file|not a regular file/,
    };
    const passwd = fs.existsSync("/etc/passwd") ? fs.readFileSync("/etc/passwd", "utf8").split("\n")[0]! : "root:x:0:0";
    for (const [callId, reason] of Object.entries(refusedWith)) {
      assert.equal(call(callId).state, "spilled", callId);
      const started = performance.now();
      const text = (await Promise.race([
        openCall(callId).then((d) => d.getText()),
        new Promise<string>((_, reject) => setTimeout(() => reject(new Error(`${callId}: the document did not open within 5 s (a read that blocks?)`)), 5000)),
      ]))!;
      assert.match(text, /^Spill file not read: /m, callId);
      assert.match(text, reason, callId);
      assert.ok(text.includes(`inline copy of ${callId}`), `${callId}: the session's own copy is shown instead`);
      assert.ok(!text.includes(SECRET), `${callId}: a file outside the blobs folder was read`);
      assert.ok(!text.includes(passwd), `${callId}: /etc/passwd was read`);
      assert.ok(performance.now() - started < 5000);
      await closeAllEditors();
    }
    const good = (await openCall("sp_good")).getText();
    assert.match(good, /from the spill file .*s-untrusted-blobs\/good\.txt/);
  });

  it("paths with .. and absolute paths outside the workspace are shown as text, never opened, never decorated", async () => {
    const markup = call("u_markup");
    const abs = call("u_abs");
    assert.equal(markup.path, "../../../../../../etc/passwd");
    await api.selectSession(hostile.file);
    try {
      const decorate = (p: string) => api.decorations.provideFileDecoration(vscode.Uri.file(p));
      assert.equal(decorate("/etc/passwd"), undefined, "no decoration outside the workspace");
      assert.equal(decorate(abs.path!), undefined);
      const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
      assert.deepEqual(tabs.map((t) => t.label), [], "selecting the session opened nothing");
      const items = await children(api.sessionsTree, find(await children(api.sessionsTree, api.sessionsTree.sessionNode(hostile.file)), "Summaries").node);
      const calls = await children(api.sessionsTree, items[0]!.node);
      const item = find(calls, "read ../../../../../../etc/passwd").item;
      assert.equal(item.command?.command, OPEN_DOCUMENT_COMMAND, "a click opens our read-only document, not the file");
      assert.equal(item.resourceUri, undefined);
    } finally {
      await api.selectSession(undefined);
    }
  });

  it("a crafted document URI or command argument cannot read a file that is not a listed session", async () => {
    const crafted = documentUri({ kind: "call", file: "/etc/passwd", key: "x" }, "crafted");
    const doc = await vscode.workspace.openTextDocument(crafted);
    assert.equal(doc.getText(), "The session /etc/passwd is no longer listed.\n");
    const secretFile = path.join(agent.sessionDir, "secret.txt");
    for (const kind of ["model", "badLines"] as const) {
      const text = (await vscode.workspace.openTextDocument(documentUri({ kind, file: secretFile }, "crafted"))).getText();
      assert.ok(!text.includes(SECRET), kind);
    }
    await vscode.commands.executeCommand("piPruner.openSessionFile", secretFile);
    await vscode.commands.executeCommand("piPruner.openSessionFile", "/etc/passwd");
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.label);
    assert.deepEqual(tabs, [], "Open Session File opens only listed session files");
    await vscode.commands.executeCommand("piPruner.openSessionFile", hostile.file);
    await waitFor(() => vscode.window.activeTextEditor?.document.uri.fsPath === hostile.file, "a listed session file to open");
  });
});

function formatBytes(n: number): string {
  return `${(n / 1024).toFixed(0)} KB`;
}
