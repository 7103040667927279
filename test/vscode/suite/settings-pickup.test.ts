// After the editor changes protectedPaths, the status bar says whether a running Pi session took
// the change up: "no running session has picked this up yet" until a session of the folder
// records settings holding it (as the live pruner does before the request that first uses them),
// then "applied by the running session at request N". The session's appends are written here as
// Pi writes them; test/e2e/live-settings.test.ts proves the real `pi` writes that record.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { recordedConfig } from "../../../core/src/view/recorded-settings.ts";
import type { PiPrunerApi } from "../../../vscode-extension/src/extension.ts";
import { extensionApi, find, children, freshAgent, ScriptedPrompter, waitFor, workspaceDir, type SuiteAgent } from "./helpers.ts";

/** The session file's entries in order. */
function entriesOf(file: string): Array<{ id: string; parentId?: string | null; type: string; message?: { role?: string } }> {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line))
    .filter((e) => e.type !== "session");
}

/** Assistant messages on the branch that ends at the file's last entry: the requests it sent so far. */
function requestsSent(file: string): number {
  const entries = entriesOf(file);
  const byId = new Map(entries.map((e) => [e.id, e]));
  let count = 0;
  for (let e = entries.at(-1); e; e = e.parentId ? byId.get(e.parentId) : undefined) if (e.type === "message" && e.message?.role === "assistant") count++;
  return count;
}

/** Appends what the live pruner writes when it takes up new settings: its settings record, on the branch's end. */
function appendSettingsRecord(file: string, protectedPaths: string[], id: string): void {
  const parentId = entriesOf(file).at(-1)!.id;
  const data = { version: "0.1.0", config: recordedConfig({ ...DEFAULT_CONFIG, protectedPaths }) };
  fs.appendFileSync(file, JSON.stringify({ type: "custom", customType: "context-prune-settings", data, id, parentId, timestamp: new Date().toISOString() }) + "\n");
}

describe("settings changes taken up by a running session", () => {
  let api: PiPrunerApi;
  let agent: SuiteAgent;
  const projectFile = () => path.join(workspaceDir(), ".pi", "settings.json");
  const fileUri = (rel: string) => vscode.Uri.file(path.join(workspaceDir(), rel));

  before(async () => {
    api = await extensionApi();
    agent = await freshAgent(api);
  });

  after(async () => {
    api.setPrompter(undefined);
    fs.rmSync(path.join(workspaceDir(), ".pi"), { recursive: true, force: true });
    api.settings.invalidate();
    await api.settled();
  });

  it("Add to protectedPaths: not picked up yet, then applied at the request after the session's record", async () => {
    const file = agent.files.pruned;
    await api.store.load(file);
    const prompter = new ScriptedPrompter("src/parser.ts", "Project settings");
    api.setPrompter(prompter);
    await vscode.commands.executeCommand("piPruner.addToProtectedPaths", fileUri("src/parser.ts"));
    assert.deepEqual(JSON.parse(fs.readFileSync(projectFile(), "utf8")).contextPrune.protectedPaths, ["**/skills/**/*.md", "src/parser.ts"]);
    assert.equal(api.settingsPickup.text, "Pi Pruner: no running session has picked this up yet");

    // A record without the change (settings the session applied for another reason) is not it.
    // Known gap: in a host that switched agent dirs before this suite, the file watcher did not
    // report this first append within 5 s (the later ones it does); the store is told of it as the
    // watcher would, so what is tested here is the pickup, not the watcher (live.test.ts is).
    await api.settled();
    appendSettingsRecord(file, ["**/skills/**/*.md"], "pickup-other");
    await api.store.fileChanged(file);
    await waitFor(() => api.store.get(file)?.data?.byId.has("pickup-other"), "the store to read the first record");
    assert.equal(api.settingsPickup.text, "Pi Pruner: no running session has picked this up yet");

    const request = requestsSent(file) + 1;
    appendSettingsRecord(file, ["**/skills/**/*.md", "src/parser.ts"], "pickup-added");
    const text = await waitFor(() => (api.settingsPickup.state?.kind === "applied" ? api.settingsPickup.text : undefined), "the status bar to say the session applied it", 3000);
    assert.equal(text, `Pi Pruner: applied by the running session at request ${request}`);
    assert.deepEqual(api.settingsPickup.state, { kind: "applied", edit: api.settingsPickup.state!.edit, sessionPath: file, request });
  });

  it("Remove from protectedPaths: waits again, and is applied only by a record without the pattern", async () => {
    const file = agent.files.pruned;
    const prompter = new ScriptedPrompter();
    api.setPrompter(prompter);
    const node = await waitFor(async () => (await children(api.protectedTree)).some((i) => i.label === "src/parser.ts") && find(await children(api.protectedTree), "src/parser.ts").node, "the view to list src/parser.ts");
    await vscode.commands.executeCommand("piPruner.removeFromProtectedPaths", node);
    assert.deepEqual(JSON.parse(fs.readFileSync(projectFile(), "utf8")).contextPrune.protectedPaths, ["**/skills/**/*.md"]);
    assert.equal(api.settingsPickup.text, "Pi Pruner: no running session has picked this up yet");
    // The removal's notification waits for Undo; it is dismissed.
    prompter.offers[0]?.choose(false);

    // The record from before the removal still holds the pattern: it does not count.
    appendSettingsRecord(file, ["**/skills/**/*.md", "src/parser.ts"], "pickup-stale");
    await waitFor(() => api.store.get(file)?.data?.byId.has("pickup-stale"), "the store to read the stale record");
    assert.equal(api.settingsPickup.text, "Pi Pruner: no running session has picked this up yet");

    const request = requestsSent(file) + 1;
    appendSettingsRecord(file, ["**/skills/**/*.md"], "pickup-removed");
    await waitFor(() => api.settingsPickup.state?.kind === "applied", "the status bar to say the session applied the removal", 3000);
    assert.equal(api.settingsPickup.text, `Pi Pruner: applied by the running session at request ${request}`);
  });
});
