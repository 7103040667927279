// Session text is untrusted: it is shown, never interpreted. No tooltip is trusted markdown or HTML,
// no item runs anything but the extension's own commands, labels carry no control or bidi
// characters, and nothing is opened or run because a session was read.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { children, extensionApi, freshAgent, waitFor, workspaceDir, type ShownItem, type SuiteAgent } from "./helpers.ts";

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
    assert.equal(session.label, "evil name [click](command:workbench.action.terminal.new) <b>bold</b>");
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
