// One pruner per session. Another pruner (pi-condense, or a second copy of pi-pruner) registers
// `context_tree_query` too, and Pi refuses to start when two extensions register one tool name as
// they load; its `/pruner` and ours would both be renamed. So pi-pruner registers its tools and
// commands at the first `session_start`, when every extension has loaded: if the tool is there
// already, pi-pruner stays out of the way for the session (no tool, no command, its handlers do
// nothing) and says so once. Its handlers are registered at once; only their work waits.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { QUERY_TOOL, oneLine } from "@pi-pruner/core";
import { showReport } from "./once-reporter.ts";

type State = "loading" | "sole" | "aside";

/** Another extension's registration of the query tool, as Pi lists it (`sourceInfo`). */
interface OtherTool {
  path: string;
  /** How it was loaded: `cli` for `-e`, the package source (`npm:pi-condense`, a folder) for a package. */
  source?: string;
  origin?: string;
}

/** How a person keeps one of the two, by the way the other was loaded. */
function howToChoose(other: OtherTool): string {
  if (other.source === "cli") return "To use pi-pruner, leave out the other's -e; to keep the other, remove pi-pruner.";
  if (other.origin === "package" && other.source) {
    const source = JSON.stringify(oneLine(other.source, 200));
    return `To use pi-pruner, take ${source} out of "packages" in settings.json, or keep it installed with its extensions off ({"source": ${source}, "extensions": []}, or pi config); to keep the other, remove pi-pruner.`;
  }
  return 'To use pi-pruner, take the other out of "extensions" in settings.json or the extensions folder, or turn it off with pi config; to keep the other, remove pi-pruner.';
}

/** The line that says which extension holds the tool and how a person picks one pruner. */
function conflictLine(other: OtherTool): string {
  return `pi-pruner is off in this session: ${QUERY_TOOL} is already registered by ${oneLine(other.path, 300)} (pi-condense or another pruner), and one history takes one pruner. ${howToChoose(other)}`;
}

/** The query tool as another extension registered it, if one did; Pi's list unreadable counts as none. */
function otherQueryTool(pi: ExtensionAPI): OtherTool | undefined {
  try {
    const tool = pi.getAllTools().find((t) => t.name === QUERY_TOOL);
    if (!tool) return undefined;
    const info = tool.sourceInfo as { path?: unknown; source?: unknown; origin?: unknown } | undefined;
    const text = (value: unknown) => (typeof value === "string" ? value : undefined);
    return { path: text(info?.path) ?? "another extension", source: text(info?.source), origin: text(info?.origin) };
  } catch {
    return undefined;
  }
}

/**
 * The API pi-pruner registers through: `on` registers at once, each handler doing nothing once
 * another pruner was found; `registerTool` and `registerCommand` wait for the first
 * `session_start` and happen only if no other extension holds the query tool then; else the line
 * saying so goes where the session's reports go.
 */
export function registerAsSolePruner(pi: ExtensionAPI): ExtensionAPI {
  let state: State = "loading";
  const waiting: Array<() => void> = [];
  pi.on("session_start", (_event, ctx) => {
    if (state !== "loading") return;
    const other = otherQueryTool(pi);
    if (other) {
      state = "aside";
      waiting.length = 0;
      showReport(ctx, conflictLine(other), "warning");
      return;
    }
    state = "sole";
    for (const register of waiting.splice(0)) register();
  });
  const later = (register: () => void): void => {
    if (state === "sole") register();
    else if (state === "loading") waiting.push(register);
  };
  const on = (event: string, handler: (...args: unknown[]) => unknown) =>
    (pi.on as (event: string, handler: (...args: unknown[]) => unknown) => unknown)(event, (...args: unknown[]) => (state === "aside" ? undefined : handler(...args)));
  return new Proxy(pi, {
    get(target, property, receiver) {
      if (property === "on") return on;
      if (property === "registerTool") return (...args: Parameters<ExtensionAPI["registerTool"]>) => later(() => target.registerTool(...args));
      if (property === "registerCommand") return (...args: Parameters<ExtensionAPI["registerCommand"]>) => later(() => target.registerCommand(...args));
      return Reflect.get(target, property, receiver);
    },
  });
}
