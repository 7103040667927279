// Where Pi lives for this window (the agent directory) and the effective `contextPrune` settings of
// each working directory, read through core's loader and cached until a settings file changes. A
// project's `.pi/settings.json` comes with the repository, so it is read only in a trusted workspace.
import { existsSync, statSync } from "node:fs";
import * as vscode from "vscode";
import { agentDirFrom, expandHome, loadConfig, ownList, resolveConfig, settingsPaths, type LoadedConfig } from "@pi-pruner/core";
import { createPathMatcher } from "@pi-pruner/core";

type AgentDirSource = "setting" | "environment" | "default";

export interface AgentDir {
  path: string;
  source: AgentDirSource;
  exists: boolean;
}

/** `piPruner.agentDir`, else PI_CODING_AGENT_DIR, else ~/.pi/agent. */
export function resolveAgentDir(setting: string | undefined, env: NodeJS.ProcessEnv = process.env): AgentDir {
  const fromSetting = setting?.trim();
  let path: string;
  let source: AgentDirSource;
  if (fromSetting) {
    path = expandHome(fromSetting);
    source = "setting";
  } else {
    path = agentDirFrom(env);
    source = env.PI_CODING_AGENT_DIR ? "environment" : "default";
  }
  let exists = false;
  try {
    exists = existsSync(path) && statSync(path).isDirectory();
  } catch {
    exists = false;
  }
  return { path, source, exists };
}

export type PatternSource = "project" | "global" | "default";

export interface EffectiveSettings {
  cwd: string;
  loaded: LoadedConfig;
  /** The workspace is trusted, so the project's settings file was read (else `loaded.project.untrusted`). */
  projectTrusted: boolean;
  files: { global: string; project: string };
  /** Where the effective protectedPaths list comes from. */
  pathsSource: PatternSource;
  toolsSource: PatternSource;
  /** Patterns of the global file that the project's own list replaces. */
  overriddenGlobalPaths: string[];
  /** The protectedPaths list the global file starts from (its own, or the default). */
  globalPaths: string[];
  /** The protectedPaths list each file sets itself (undefined: it sets none, or none that is valid). */
  ownPaths: { project: string[] | undefined; global: string[] | undefined };
  /** First pattern protecting a path (relative to cwd, or absolute). */
  match(path: string): string | undefined;
}


/** VS Code's workspace trust as the settings need it (a test can hand in its own). */
export interface WorkspaceTrust {
  readonly isTrusted: boolean;
  readonly onDidGrantWorkspaceTrust: vscode.Event<void>;
}

export class PruneSettings implements vscode.Disposable {
  private readonly cache = new Map<string, EffectiveSettings>();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private agent: AgentDir;
  private readonly trust: WorkspaceTrust;
  private readonly trustGranted: vscode.Disposable;

  constructor(agent: AgentDir, trust: WorkspaceTrust = vscode.workspace) {
    this.agent = agent;
    this.trust = trust;
    // Trust is granted once per window and never taken back without a reload: read again with the project's file.
    this.trustGranted = trust.onDidGrantWorkspaceTrust(() => this.invalidate());
  }

  get agentDir(): AgentDir {
    return this.agent;
  }

  setAgentDir(agent: AgentDir): void {
    this.agent = agent;
    this.invalidate();
  }

  /** Settings files changed on disk (or the agent dir moved): every cached answer is dropped. */
  invalidate(): void {
    this.cache.clear();
    this.changed.fire();
  }

  forCwd(cwd: string): EffectiveSettings {
    let settings = this.cache.get(cwd);
    if (!settings) {
      settings = this.load(cwd);
      this.cache.set(cwd, settings);
    }
    return settings;
  }

  private load(cwd: string): EffectiveSettings {
    const projectTrusted = this.trust.isTrusted;
    const loaded = loadConfig({ agentDir: this.agent.path, cwd, projectTrusted });
    const projectPaths = ownList(loaded.projectBlock, "protectedPaths");
    const globalOwnPaths = ownList(loaded.globalBlock, "protectedPaths");
    const projectTools = ownList(loaded.projectBlock, "protectedTools");
    const globalTools = ownList(loaded.globalBlock, "protectedTools");
    const matcher = createPathMatcher(loaded.config.protectedPaths);
    const globalPaths = resolveConfig(loaded.globalBlock, undefined).config.protectedPaths;
    return {
      cwd,
      loaded,
      projectTrusted,
      files: settingsPaths({ agentDir: this.agent.path, cwd }),
      pathsSource: projectPaths ? "project" : globalOwnPaths ? "global" : "default",
      toolsSource: projectTools ? "project" : globalTools ? "global" : "default",
      overriddenGlobalPaths: projectPaths && globalOwnPaths ? globalOwnPaths.filter((p) => !projectPaths.includes(p)) : [],
      globalPaths,
      ownPaths: { project: projectPaths, global: globalOwnPaths },
      match: matcher,
    };
  }

  dispose(): void {
    this.trustGranted.dispose();
    this.changed.dispose();
  }
}
