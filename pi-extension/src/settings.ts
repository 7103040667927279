// Settings IO for the live pruner: reading the effective `contextPrune` block (project settings
// only for trusted projects, as Pi does) and writing changes through core's one settings writer.
import { agentDirFrom, loadConfig, resolveConfig, settingsPaths, type ConfigWarning, type PruneConfig } from "@pi-pruner/core";
import { setPruneSetting } from "@pi-pruner/core";

export interface LoadedSettings {
  config: PruneConfig;
  warnings: ConfigWarning[];
  globalFile: string;
  projectFile: string;
  /** The project settings file carries a `contextPrune` block. */
  projectHasBlock: boolean;
}

export function loadPrunerSettings(cwd: string, projectTrusted: boolean): LoadedSettings {
  const agentDir = agentDirFrom(process.env);
  const paths = settingsPaths({ agentDir, cwd });
  const loaded = loadConfig({ agentDir, cwd });
  const files = { globalFile: paths.global, projectFile: paths.project, projectHasBlock: projectTrusted && loaded.projectBlock !== undefined };
  if (projectTrusted) return { config: loaded.config, warnings: loaded.warnings, ...files };
  const globalOnly = resolveConfig(loaded.globalBlock, undefined);
  return { config: globalOnly.config, warnings: globalOnly.warnings, ...files };
}

/**
 * Where a `/pruner` change is written: the project file when it already carries a
 * `contextPrune` block (so the change wins there), else the global file.
 */
export function settingsTarget(settings: LoadedSettings): string {
  return settings.projectHasBlock ? settings.projectFile : settings.globalFile;
}

export function writePrunerSetting(file: string, keyPath: string[], value: unknown): boolean {
  return setPruneSetting(file, keyPath, value).changed;
}
