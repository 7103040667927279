// Sessions other extensions wrote, in a real extension host: the tree says who wrote them and that
// what it shows is in pi-pruner's wording (with the counts that must match), shows states as they
// were (chains Pi's compaction removed, chains built without a summarizer, results sent raw or not
// at all, outputs that cannot come back), lists the writer's diagnostics under the session and in
// what they concern, names a call without a short ref by its tool-call id, and finds a spill of a
// moved session folder in its blobs folder by name. Fixtures: test/helpers/condense-sessions.ts
// (pi-condense 2.9.1's entry formats) and mulligan-sessions.ts (pi-mulligan's).
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { condenseSession, type CondenseSession } from "../../helpers/condense-sessions.ts";
import { mulliganSessions, prunedSession, sessionDirName, writeSession } from "../fixtures/sessions.ts";
import { children, closeAllEditors, extensionApi, find, installPiSession, tempDir, tooltipText, useAgentDir, workspaceDir, type ShownItem } from "./helpers.ts";

type Items = ShownItem<SessionNode>[];

describe("sessions other extensions wrote", () => {
  let api: PiPrunerApi;
  let files: Record<"condense" | "lost" | "mulligan" | "ours" | "pi", string>;
  let condense: CondenseSession;
  let sessionDir: string;

  const open = (node?: SessionNode) => children(api.sessionsTree, node);
  const top = (file: string) => open(api.sessionsTree.sessionNode(file));

  before(async () => {
    api = await extensionApi();
    const agentDir = tempDir("pi-pruner-foreign-");
    sessionDir = path.join(agentDir, "sessions", sessionDirName(workspaceDir()));
    // Written elsewhere and moved here: the spill's recorded path names the old folder, the file lies in this one's blobs.
    condense = condenseSession({ cwd: workspaceDir(), oldSessionDir: "/home/alice/.pi/agent/sessions/--old-place--" });
    // Its spill file is in no blobs folder, and its record gives a size the session's copy of the log does not have.
    const lost = condenseSession({ cwd: workspaceDir(), sessionId: "condense-lost-spill", spillBytes: Buffer.byteLength(condense.spill.text, "utf8") + 1 });
    const mulligan = mulliganSessions(workspaceDir()).pi16;
    files = {
      condense: writeSession(sessionDir, { file: "2025-03-03T09-00-00-000Z_condense-2-9-1.jsonl", text: condense.builder.toJsonl(), extraFiles: { [`condense-2-9-1-blobs/${condense.spill.fileName}`]: condense.spill.text } }, new Date(Date.UTC(2025, 2, 3, 10))),
      lost: writeSession(sessionDir, { file: "2025-03-02T09-00-00-000Z_condense-lost-spill.jsonl", text: lost.builder.toJsonl() }, new Date(Date.UTC(2025, 2, 2, 10))),
      mulligan: writeSession(sessionDir, mulligan, new Date(Date.UTC(2025, 2, 1, 10))),
      ours: writeSession(sessionDir, prunedSession(workspaceDir()), new Date(Date.UTC(2025, 1, 1, 10))),
      pi: installPiSession(sessionDir),
    };
    await useAgentDir(api, agentDir);
  });
  afterEach(closeAllEditors);

  async function click(item: vscode.TreeItem): Promise<string> {
    assert.ok(item.command, `item ${String(item.label)} has no command`);
    await vscode.commands.executeCommand(item.command.command, ...(item.command.arguments ?? []));
    for (let i = 0; i < 200; i++) {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.uri.scheme === "pi-pruner") return editor.document.getText();
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error("no pi-pruner document became active");
  }

  async function chainItems(file: string): Promise<Items> {
    return open(find(await top(file), "Compressed chains").node);
  }

  it("a session pi-condense wrote says so first, that it is shown in pi-pruner's wording, and what must match", async () => {
    const items = await top(files.condense);
    assert.deepEqual(
      items.map((i) => i.label),
      ["Written by pi-condense 2.x", "Model view", "Summaries", "Compressed chains", "Pi compactions"],
    );
    const writer = items[0]!;
    assert.equal(writer.description, "shown in pi-pruner's wording · 6 diagnostics (3 warnings)");
    assert.equal((writer.item.iconPath as vscode.ThemeIcon).id, "warning");
    const tooltip = tooltipText(writer.item);
    assert.match(tooltip, /Recognised from pi-condense 2\.x: its summary footer; its flush-metrics entries/);
    assert.match(tooltip, /Rendered with pi-pruner's own stub and chain wording, not the writer's/);
    assert.match(tooltip, /These counts must match what was sent: 1 result stubbed, 0 chains compressed\./);
  });

  it("its model view's header says the same, with the counts of the request shown", async () => {
    const editor = (await vscode.commands.executeCommand("piPruner.showModelView", files.condense)) as vscode.TextEditor;
    const text = editor.document.getText();
    assert.match(text, /^# Model view: last request sent, request \d+ of \d+, as it was sent$/m);
    assert.match(text, /^# Written by: pi-condense 2\.x \(recognised from its summary footer; its flush-metrics entries\)$/m);
    assert.match(text, /^# Rendered with pi-pruner's own stub and chain wording, not the writer's: the words of stubs and chain blocks differ from what was sent\.$/m);
    assert.match(text, /^# These counts must match what was sent: 1 result stubbed, 0 chains compressed\.$/m);
  });

  it("under it, the writer's diagnostics: flush reasons, the failed summarizer call, the budget flush, the unresolved ranges", async () => {
    const diagnostics = await open(find(await top(files.condense), "Written by pi-condense 2.x").node);
    assert.deepEqual(
      diagnostics.map((d) => [d.label, d.description, (d.item.iconPath as vscode.ThemeIcon).id]),
      [
        ["flush on the agent's final reply: 2 batches summarized", "flush record", "info"],
        ["flush on the agent's final reply: nothing summarized: the batches were below minBatchChars", "flush record", "info"],
        ["flush on the agent's final reply failed: 1 batch stayed raw (a summarizer call or a write failed)", "flush record", "warning"],
        ["budget flush (the context reached autoBudgetThreshold): 2 batches summarized", "flush record", "info"],
        ["chain b1 was not found in the context it was rendered for (unresolved range): nothing was compressed for it", "unresolved-range", "warning"],
        ["chain b2 was not found in the context it was rendered for (unresolved range): nothing was compressed for it", "unresolved-range", "warning"],
      ],
    );
    assert.match(tooltipText(diagnostics[4]!.item), /unresolved-range: blockId=b1 start=\d+ final=\d+/);
    assert.match(tooltipText(diagnostics[2]!.item), /The writer records that the flush failed, not why \(an HTTP error of the summarizer, a timeout, a write\)\./);
  });

  it("chains Pi's compaction removed are not shown as compressed; the one built without a summarizer says so", async () => {
    const chains = await chainItems(files.condense);
    assert.deepEqual(
      chains.map((c) => [c.label, c.description]),
      [
        ["b1", "sent as a block until Pi's compaction removed it · t1, t2"],
        ["b2", "removed by compaction, never sent · no summarizer · t5, t6"],
      ],
    );
    for (const chain of chains) assert.equal((chain.item.iconPath as vscode.ThemeIcon).color?.id, "disabledForeground", `${chain.label} is greyed`);
    assert.match(tooltipText(chains[1]!.item), /Body: built without a summarizer: a list of its calls/);
  });

  it("under a chain: the text pi-condense persisted for its block (a click opens it), its diagnostic, then its calls", async () => {
    const [b1, b2] = await chainItems(files.condense);
    const under = await open(b2!.node);
    assert.deepEqual(
      under.map((i) => i.label),
      [
        "As pi-condense 2.x persisted it",
        "chain b2 was not found in the context it was rendered for (unresolved range): nothing was compressed for it",
        "read src/rules.ts",
        "edit src/rules.ts",
      ],
    );
    const text = await click(under[0]!.item);
    assert.match(text, /^# b2 as pi-condense 2\.x persisted it \(chain entry e\d+\)$/m);
    assert.match(text, /^# This chain: removed by compaction, never sent; body: built without a summarizer/m);
    assert.ok(text.endsWith("\n- `t5` read src/rules.ts\n- `t6` edit src/rules.ts\n"), text);
    const b1Text = await click((await open(b1!.node))[0]!.item);
    assert.ok(b1Text.includes("Read the parser and the README; the test log (spilled) shows every rule failing because the rule table is empty."));
  });

  it("the calls: one removed by compaction says it is not sent; the spill without a short ref is named by its tool-call id and read from the moved blobs folder", async () => {
    const [b1] = await chainItems(files.condense);
    const calls = (await open(b1!.node)).filter((i) => i.node.kind === "call");
    assert.deepEqual(
      calls.map((c) => [c.label, c.description.replace(/ · [\d,]+ chars/, "")]),
      [
        ["read src/parser.ts", "t1 · compressed · not sent"],
        ["bash npm test", "call_npm_test · compressed · not sent"],
        ["read README.md", "t2 · compressed · not sent"],
      ],
    );
    assert.match(tooltipText(calls[1]!.item), /removed by Pi's compaction: not sent since/);
    const text = await click(calls[1]!.item);
    assert.match(text, /^State: {8}inside compressed chain b1$/m);
    assert.match(text, /^Sent: {9}removed by Pi's compaction: not sent since$/m);
    assert.doesNotMatch(text, /outside this session's blobs folder/);
    assert.ok(text.includes(`from the spill file ${path.join(sessionDir, "condense-2-9-1-blobs", condense.spill.fileName)}`), "read from this session's blobs folder");
    assert.ok(text.includes("FAIL test/parser.test.ts > rule 1399 > matches"), "the whole spilled log");
  });

  it("a recovered output sent raw after the compaction is not shown as a stub; the failed flush's warning is on the call it left raw", async () => {
    const summaries = await open(find(await top(files.condense), "Summaries").node);
    const calls: Items = [];
    for (const s of summaries) calls.push(...(await open(s.node)));
    const recovery = find(calls, /^context_tree_query/);
    assert.equal(recovery.description.replace(/ · [\d,]+ chars/, ""), "t4 · summarized · sent raw");
    assert.match(tooltipText(recovery.item), /sent raw: recovered output in its grace window/);
    const suite = find(calls, "bash npm run test:all");
    assert.equal((suite.item.iconPath as vscode.ThemeIcon).color?.id, "list.warningForeground", "its summarized icon, tinted as a warning");
    assert.match(tooltipText(suite.item), /The writer's flush record: flush on the agent's final reply failed: 1 batch stayed raw/);
    assert.match(tooltipText(suite.item), /The writer's flush record: budget flush \(the context reached autoBudgetThreshold\): 2 batches summarized/);
  });

  it("a spill whose file is in no blobs folder, and of which the session file holds no copy, says it cannot be recovered, and why", async () => {
    const [b1] = await chainItems(files.lost);
    const spilled = find(await open(b1!.node), "bash npm test");
    assert.match(spilled.description, /^call_npm_test · compressed · [\d,]+ chars · not sent · cannot be recovered$/);
    assert.deepEqual([(spilled.item.iconPath as vscode.ThemeIcon).id, (spilled.item.iconPath as vscode.ThemeIcon).color?.id], ["archive", "list.warningForeground"]);
    assert.match(tooltipText(spilled.item), /Cannot be recovered: its spill file cannot be read back: .*condense-lost-spill-blobs\/call_npm_test_\d+\.txt is outside this session's blobs folder .*which holds no file call_npm_test_\d+\.txt either; refused/);
  });

  it("a session pi-mulligan wrote on Pi 1.6 says its filter changed nothing there", async () => {
    const writer = find(await top(files.mulligan), "Written by pi-mulligan");
    assert.equal(writer.description, "shown in pi-pruner's wording");
    assert.match(tooltipText(writer.item), /pi-mulligan's context filter changed nothing on Pi 1\.6 .*what was sent hid no span and shrank no message\./);
    // The session's tree is what was sent: its markers are credited with nothing.
    assert.match(tooltipText(writer.item), /Shown as it was sent, the markers not applied: 0 spans hidden, 0 messages shrunk\./);
  });

  it("our own sessions, the real-Pi one among them, claim nothing of the kind", async () => {
    for (const file of [files.ours, files.pi]) {
      const labels = (await top(file)).map((i) => i.label);
      assert.ok(!labels.some((l) => l.startsWith("Written by")), `${path.basename(file)}: ${labels.join(", ")}`);
      assert.equal(api.store.get(file)!.view!.writer.foreign, false, path.basename(file));
    }
    assert.match(api.store.get(files.pi)!.view!.writer.label, /^pi-pruner/);
    assert.ok(fs.existsSync(files.pi));
  });
});
