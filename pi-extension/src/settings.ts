// Settings IO for the live pruner: reading the effective `contextPrune` block (project settings
// only for trusted projects, as Pi does) and writing changes through core's one settings writer.
import { agentDirFrom, loadConfig, settingsPaths, type ConfigWarning, type PruneConfig } from "@pi-pruner/core";
import { setPruneSetting } from "@pi-pruner/core";

export interface LoadedSettings {
  config: PruneConfig;
  warnings: ConfigWarning[];
  globalFile: string;
  projectFile: string;
  /** The project settings file carries a `contextPrune` block. */
  projectHasBlock: boolean;
}

/**
 * The effective settings for `cwd`. An untrusted project's `.pi/settings.json` is never opened
 * (it comes with whatever repository was cloned); its `contextPrune` block then does not apply.
 */
export function loadPrunerSettings(cwd: string, projectTrusted: boolean): LoadedSettings {
  const agentDir = agentDirFrom(process.env);
  const paths = settingsPaths({ agentDir, cwd });
  const loaded = loadConfig({ agentDir, cwd, projectTrusted });
  return {
    config: loaded.config,
    warnings: loaded.warnings,
    globalFile: paths.global,
    projectFile: paths.project,
    projectHasBlock: loaded.projectBlock !== undefined,
  };
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
