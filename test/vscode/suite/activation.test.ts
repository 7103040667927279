// Generic smoke tests of the extension in a real extension host: it is found, activates, and
// every command it contributes is registered. Nothing here depends on what the extension does.
import * as assert from "node:assert/strict";
import * as vscode from "vscode";
import { COMMAND_IDS } from "../../../vscode-extension/src/command-ids.ts";

const EXTENSION_ID = "pi-pruner.pi-pruner-vscode";

describe("extension host", () => {
  it("loads the extension under development", () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is not loaded`);
  });

  it("activates it without error", async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    await ext.activate();
    assert.equal(ext.isActive, true);
  });

  it("registers every command the extension contributes", async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    await ext.activate();
    const contributed: string[] = (ext.packageJSON.contributes?.commands ?? []).map((c: { command: string }) => c.command);
    assert.ok(contributed.length > 0, "the extension contributes no command");
    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = contributed.filter((c) => !registered.has(c));
    assert.deepEqual(missing, [], `contributed but not registered: ${missing.join(", ")}`);
    // The extension's one list of command ids names exactly what package.json contributes.
    assert.deepEqual([...COMMAND_IDS].sort(), [...contributed].sort());
  });

  it("receives the environment the runner passed", function () {
    // The runner sets PI_PRUNER_TEST_HOST, and PI_PRUNER_EXPECT_ENV (JSON) listing every variable
    // given with --env, so fixture paths such as PI_CODING_AGENT_DIR are checked to arrive.
    if (!process.env.PI_PRUNER_TEST_HOST) this.skip();
    const expected: Record<string, string> = JSON.parse(process.env.PI_PRUNER_EXPECT_ENV || "{}");
    for (const [k, v] of Object.entries(expected)) assert.equal(process.env[k], v, `env ${k}`);
    console.log(`      host: ${process.env.PI_PRUNER_TEST_HOST}, VS Code ${vscode.version}, Node ${process.version}, env checked: ${Object.keys(expected).join(", ") || "(none)"}`);
  });
});
