// The questions a command asks a person (quick picks and messages), behind one interface so the
// extension-host tests can answer them instead.
import * as vscode from "vscode";

export interface Prompter {
  pick<T extends vscode.QuickPickItem>(items: T[], options: vscode.QuickPickOptions): Promise<T | undefined>;
  info(message: string): void;
  /** An information message with one button: true once the person chooses it, false when it is dismissed. */
  offer(message: string, action: string): Promise<boolean>;
  warn(message: string): void;
  error(message: string): void;
}

export const windowPrompter: Prompter = {
  pick: (items, options) => Promise.resolve(vscode.window.showQuickPick(items, options)),
  info: (message) => void vscode.window.showInformationMessage(message),
  offer: async (message, action) => (await vscode.window.showInformationMessage(message, action)) === action,
  warn: (message) => void vscode.window.showWarningMessage(message),
  error: (message) => void vscode.window.showErrorMessage(message),
};
