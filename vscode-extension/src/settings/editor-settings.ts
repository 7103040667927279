// The extension's own settings (`piPruner.*`), read in one place. Their defaults live only in
// package.json's `contributes.configuration`, which VS Code applies when a setting is unset.
import * as vscode from "vscode";

/** Each setting's type, as package.json declares it. */
export interface EditorSettings {
  agentDir: string;
  showAllSessions: boolean;
  "decorations.enabled": boolean;
  "protectedFiles.maxFilesPerPattern": number;
}

export type EditorSettingKey = keyof EditorSettings;

const SECTION = "piPruner";

export function editorSetting<K extends EditorSettingKey>(key: K): EditorSettings[K] {
  return vscode.workspace.getConfiguration(SECTION).get(key) as EditorSettings[K];
}

/** Whether a configuration change touches any of `keys`. */
export function affectsEditorSetting(event: vscode.ConfigurationChangeEvent, ...keys: EditorSettingKey[]): boolean {
  return keys.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}
