// A project moved (or copied) with its sessions: the session file sits in the open folder's session
// folder but its cwd is the folder it was recorded in. The Sessions view says so; the explorer's
// pruned mark and Sessions That Read This File find the open folder's files by their path inside
// the recorded folder. The pruned mark itself is scissors, not a dot an editor tab would show for
// unsaved changes, and its tooltip says what it means.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { PRUNED_BADGE } from "../../../vscode-extension/src/decorations.ts";
import { installPiSession } from "../fixtures/sessions.ts";
import { closeAllEditors, extensionApi, ScriptedPrompter, sessionDirName, tempDir, useAgentDir, waitFor, workspaceDir } from "./helpers.ts";

/** Where the session was recorded: not the open folder, and not on this machine. */
const RECORDED_IN = "/home/someone/projects/old-place";

describe("a project moved with its sessions", () => {
  let api: PiPrunerApi;
  let file: string;
  const parserUri = () => vscode.Uri.file(path.join(workspaceDir(), "src", "parser.ts"));

  before(async () => {
    api = await extensionApi();
    const source = process.env.PI_PRUNER_FIXTURE_PI_SESSION;
    if (!source) throw new Error("no real-Pi fixture session: run the suite through test/vscode/run.mjs");
    const agentDir = tempDir("pi-pruner-moved-");
    const sessionDir = path.join(agentDir, "sessions", sessionDirName(workspaceDir()));
    fs.mkdirSync(sessionDir, { recursive: true });
    file = installPiSession(source, sessionDir, RECORDED_IN);
    await useAgentDir(api, agentDir);
  });

  afterEach(async () => {
    api.setPrompter(undefined);
    await closeAllEditors();
  });

  after(async () => {
    await api.selectSession(undefined);
  });

  it("the Sessions view says the session was recorded in another folder, and how its files are matched", async () => {
    const message = await waitFor(() => api.sessionsView.message, "the Sessions view's message");
    assert.equal(message, `1 session was recorded in another folder (${RECORDED_IN}): its files are matched by their path inside that folder.`);
  });

  it("marks the open folder's file the session read and pruned, found by its path inside the recorded folder", async () => {
    await api.selectSession(file);
    const parser = await waitFor(() => api.decorations.provideFileDecoration(parserUri()) as vscode.FileDecoration | undefined, "src/parser.ts to carry the pruned mark");
    assert.equal(parser.badge, PRUNED_BADGE);
    assert.match(String(parser.tooltip), /^✂ pruned: Pi read this file in the selected session, and the model is sent less of it: t1 \(summarized\)/);
  });

  it("the pruned mark is no dot (VS Code's unsaved-changes mark in tabs) and fits a badge", () => {
    assert.ok([...PRUNED_BADGE].length <= 2 && PRUNED_BADGE.length <= 2, `a badge holds at most two characters: ${JSON.stringify(PRUNED_BADGE)}`);
    for (const dot of ["•", "●", "·", "∙", "⬤", "○", "◦", "⚫"]) assert.ok(!PRUNED_BADGE.includes(dot), `the badge ${JSON.stringify(PRUNED_BADGE)} is not a dot`);
    assert.equal(PRUNED_BADGE.codePointAt(0), 0x2702, "scissors");
  });

  it("Sessions That Read This File lists the session's reads of the open folder's file", async () => {
    let offered: vscode.QuickPickItem[] = [];
    const prompter = new ScriptedPrompter((items) => {
      offered = items;
      return undefined;
    });
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.sessionsThatReadFile", parserUri());
    assert.deepEqual(prompter.messages, [], "no \"no listed session names\" message");
    const calls = offered.filter((i) => i.kind !== vscode.QuickPickItemKind.Separator).map((i) => `${i.label} | ${i.description ?? ""}`);
    assert.ok(calls.some((c) => /^read t1: src\/parser\.ts \| summarized/.test(c)), `the summarized read is listed: ${calls.join("; ")}`);
  });
});
