// Minimal placeholder extension: proves the build and the extension-host test infrastructure.
// The real Pi Pruner extension (trees, decorations, model view) replaces this file.
import * as vscode from "vscode";

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand("piPruner.ping", () => {
      void vscode.window.showInformationMessage("Pi Pruner: pong");
      return "pong";
    }),
  );
}

export function deactivate(): void {}
