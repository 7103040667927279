// The agent's self-control markers in a real extension host, over the sessions pi-mulligan wrote
// of one story on Pi 0.84 and on Pi 1.6: the marker items under a session with their states, the
// note or replacement in their tooltips and documents, and the model view marking the rewound span.
import * as assert from "node:assert/strict";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import type { SessionNode } from "../../../vscode-extension/src/trees/session-nodes.ts";
import { MULLIGAN_MARKER_UUIDS, MULLIGAN_STORY_TEXT } from "../../helpers/mulligan-sessions.ts";
import { mulliganSessions, sessionDirName, writeSession } from "../fixtures/sessions.ts";
import { children, closeAllEditors, extensionApi, find, tempDir, tooltipText, useAgentDir, workspaceDir, type ShownItem } from "./helpers.ts";
import * as path from "node:path";

type Items = ShownItem<SessionNode>[];

describe("self-control markers", () => {
  let api: PiPrunerApi;
  let files: Record<"pi084" | "pi16", string>;
  let fixtures: ReturnType<typeof mulliganSessions>;
  const open = (node?: SessionNode) => children(api.sessionsTree, node);

  before(async () => {
    api = await extensionApi();
    const agentDir = tempDir("pi-pruner-markers-");
    const sessionDir = path.join(agentDir, "sessions", sessionDirName(workspaceDir()));
    fixtures = mulliganSessions(workspaceDir());
    files = {
      pi084: writeSession(sessionDir, fixtures.pi084, new Date(Date.UTC(2025, 0, 8, 9, 0))),
      pi16: writeSession(sessionDir, fixtures.pi16, new Date(Date.UTC(2025, 0, 8, 9, 1))),
    };
    await useAgentDir(api, agentDir);
  });
  afterEach(closeAllEditors);

  async function markerItems(file: string): Promise<Items> {
    const top = await open(api.sessionsTree.sessionNode(file));
    return open(find(top, "Self-control markers").node);
  }

  async function waitForEditor(): Promise<vscode.TextEditor> {
    for (let i = 0; i < 200; i++) {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.uri.scheme === "pi-pruner") return editor;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error("no pi-pruner document became active");
  }

  it("under a session written on Pi 0.84: the shrink active, the rewind active with what it leaves out, the cancelled shrink, the checkpoint", async () => {
    const items = await markerItems(files.pi084);
    assert.deepEqual(
      items.map((m) => [m.label, m.description]),
      [
        [`shrink ${MULLIGAN_MARKER_UUIDS.shrinkTestLog}`, "active · the last bash result"],
        [`rewind ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}`, "active · last_tool_call_group · 2 messages left out"],
        [`shrink ${MULLIGAN_MARKER_UUIDS.shrinkGrep}`, `cancelled · the result of tool call ${fixtures.pi084.story.ids.grep.callId}`],
        ["checkpoint before-refactor", "set"],
      ],
    );
    assert.deepEqual(
      items.map((m) => m.item.contextValue),
      ["marker.shrink.active", "marker.rewind.active", "marker.shrink.cancelled", "marker.checkpoint"],
    );
    assert.equal((items[2]!.item.iconPath as vscode.ThemeIcon).color?.id, "disabledForeground", "a cancelled marker is greyed");
    assert.equal((items[1]!.item.iconPath as vscode.ThemeIcon).color, undefined);
  });

  it("under a session written on Pi 1.6, the test-log shrink that pi-mulligan's stale guard retired shows cancelled; the rewind is active but left nothing out there", async () => {
    const items = await markerItems(files.pi16);
    assert.deepEqual(
      items.map((m) => [m.label, m.description.split(" · ")[0]]),
      [
        [`shrink ${MULLIGAN_MARKER_UUIDS.shrinkTestLog}`, "cancelled"],
        [`rewind ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}`, "active"],
        [`shrink ${MULLIGAN_MARKER_UUIDS.shrinkGrep}`, "cancelled"],
        ["checkpoint before-refactor", "set"],
      ],
    );
    // pi-mulligan's filter did nothing on Pi 1.6: the session's rewind hid nothing (the next request's view applies it).
    assert.match(items[1]!.description, /leaves nothing out: pi-mulligan's context filter did nothing on Pi 1\.6/);
  });

  it("a rewind's tooltip holds its note, a shrink's its replacement; a click opens the marker with its note and ledger", async () => {
    const items = await markerItems(files.pi084);
    const rewind = find(items, `rewind ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}`);
    const tip = tooltipText(rewind.item);
    assert.match(tip, new RegExp(`What happened: ${MULLIGAN_STORY_TEXT.noteWhatHappened.replace(/[.()]/g, "\\$&")}`));
    assert.match(tip, /True current state: The bug is in src\/math\.ts/);
    assert.match(tip, /Next: Edit src\/math\.ts so add\(\) returns a \+ b/);
    assert.match(tooltipText(items[0]!.item), new RegExp(MULLIGAN_STORY_TEXT.testLogReplacement.replace(/[.()+]/g, "\\$&")));

    assert.ok(rewind.item.command, "the rewind item opens a document");
    await vscode.commands.executeCommand(rewind.item.command.command, ...(rewind.item.command.arguments ?? []));
    const text = (await waitForEditor()).document.getText();
    assert.match(text, new RegExp(`^# rewind ${MULLIGAN_MARKER_UUIDS.rewindWrongRead} · active$`, "m"));
    assert.match(text, /^ {2}What happened: {6}I read src\/legacy\/math-old\.ts, which nothing imports\.$/m);
    assert.match(text, /^ {2}Read: {5}src\/legacy\/math-old\.ts$/m);
  });

  it("the model view marks the rewound span where it was, with its note, and the shrunk result by its shrink; the rewound output is not in it", async () => {
    const { ids } = fixtures.pi084.story;
    await vscode.commands.executeCommand("piPruner.showModelView", files.pi084);
    const text = (await waitForEditor()).document.getText();
    assert.ok(!text.includes(MULLIGAN_STORY_TEXT.wrongFile), "the rewound read's output is not sent");
    assert.match(text, new RegExp(`^# rewind ${MULLIGAN_MARKER_UUIDS.rewindWrongRead} · active · last_tool_call_group · 2 messages left out$`, "m"));
    const sections = text.split("\n\n");
    const at = sections.findIndex((s) => s.startsWith(`[rewound ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}: 2 messages — note: what happened: ${MULLIGAN_STORY_TEXT.noteWhatHappened}`));
    assert.ok(at > 0, "a [rewound …] line stands where the span was");
    assert.match(sections[at - 1]!, new RegExp(`^── \\d+\\. tool result · mulligan_shrink · ${ids.shrinkTestLog.callId} ──`));
    assert.match(sections[at + 1]!, /^── \d+\. assistant ──\n→ mulligan_rewind /);
    assert.match(text, new RegExp(`── \\d+\\. tool result · bash · ${ids.testRun.callId} · shrunk by ${MULLIGAN_MARKER_UUIDS.shrinkTestLog} ──\\n<context-shrunk>\\n`));
  });

  it("on Pi 1.6 the last request sent carried the test log whole and the read the rewind named (it did nothing there); the next request applies the rewind", async () => {
    await vscode.commands.executeCommand("piPruner.showModelView", files.pi16);
    let text = (await waitForEditor()).document.getText();
    assert.match(text, /^# Model view: last request sent/m);
    assert.ok(text.includes(MULLIGAN_STORY_TEXT.testLogFailure), "the whole test log was sent");
    assert.ok(!text.includes("shrunk by"), "no message is marked shrunk");
    assert.ok(text.includes(MULLIGAN_STORY_TEXT.wrongFile), "the rewound read was sent: pi-mulligan's filter did nothing on Pi 1.6");
    assert.ok(!text.includes(`[rewound ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}`));
    assert.match(text, /^# Shown as it was sent, the markers not applied: 0 spans hidden, 0 messages shrunk\.$/m);
    await vscode.commands.executeCommand("piPruner.nextRequest");
    for (let i = 0; i < 200 && !/^# Model view: the next request/m.test(text); i++) {
      await new Promise((r) => setTimeout(r, 25));
      text = vscode.window.activeTextEditor?.document.getText() ?? "";
    }
    assert.match(text, /^# Model view: the next request/m);
    assert.ok(!text.includes(MULLIGAN_STORY_TEXT.wrongFile), "pi-pruner would leave the rewound read out");
    assert.match(text, new RegExp(`\\[rewound ${MULLIGAN_MARKER_UUIDS.rewindWrongRead}: 2 messages`));
    assert.match(text, /^# The next request is shown as pi-pruner would send it, applying the markers: 1 span hidden, 0 messages shrunk\.$/m);
  });
});
