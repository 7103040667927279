// The calls of a session that name one file: a read, edit or write of it, a grep or find whose path
// is it, a bash command that mentions it. The path is matched as the session's cwd resolves it and
// as written (relative to the workspace, or absolute), so `src/a.ts`, `./src/a.ts` and
// `/srv/app/src/a.ts` are one file for a session started in `/srv/app`.
import { posix } from "node:path";
import type { AnyEntry } from "../shapes/entries.ts";
import { readControls } from "../control/read-controls.ts";
import type { CallView, SessionView } from "./session-view.ts";

/** The file asked about: its absolute path, and its path relative to the workspace folder holding it. */
export interface FileQuery {
  absolute: string;
  relative?: string;
}

type FileCallMatch = "path" | "command";

export interface FileCall {
  call: CallView;
  /** How the call names the file: its path argument, or the text of its command. */
  match: FileCallMatch;
  /** Its state in a person's words: "summarized (ref t1)", "raw; removed by Pi's compaction: not sent since". */
  stateText: string;
}

/** Forward slashes and no trailing slash, so Windows paths and posix paths compare alike. */
function normalise(path: string): string {
  const slashed = path.replace(/\\/g, "/");
  const cleaned = posix.normalize(slashed);
  return cleaned.length > 1 && cleaned.endsWith("/") ? cleaned.slice(0, -1) : cleaned;
}

function isAbsolute(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:\//.test(path);
}

/** The absolute path a call's path argument names, for a session started in `cwd`. */
function resolvedPath(path: string, cwd: string | undefined): string | undefined {
  const p = normalise(path);
  if (isAbsolute(p)) return p;
  return cwd ? normalise(posix.join(normalise(cwd), p)) : undefined;
}

/** What separates words in a shell command (quotes, operators, `=` of `--file=…`, `:` of `a.ts:12`). */
const COMMAND_SEPARATORS = /[\s'"`;|&<>()=,:]+/;

/** True when one word of `command`, normalised, is `path`: `src/a.ts` is not found in `src/data.ts`. */
function mentions(command: string, path: string): boolean {
  return command.split(COMMAND_SEPARATORS).some((word) => word !== "" && normalise(word) === path);
}

/**
 * The entries the branch's active rewinds name, each with the rewind's id. A rewind leaves a turn
 * holding protected output in place, so a name is not proof of a hidden call: callsNamingFile
 * keeps only rewinds that hide messages now, and never marks a protected call.
 */
export function rewoundEntries(branch: readonly AnyEntry[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const marker of readControls(branch).markers) {
    if (marker.kind !== "rewind" || marker.state !== "active") continue;
    for (const id of marker.hiddenEntryIds) if (!out.has(id)) out.set(id, marker.id);
  }
  return out;
}

/** What the agent's markers do to a call: the rewind that hides it, the shrink that replaces its output. */
export interface CallMarks {
  /** Entry id → the id of the active rewind naming it (rewoundEntries). */
  rewound?: ReadonlyMap<string, string>;
  /** Result entry id → the id of the applied shrink replacing it. */
  shrunk?: ReadonlyMap<string, string>;
}

/** The shrinks of a view that replace a message now, by the entry they replace. */
function shrunkEntries(view: Pick<SessionView, "markers">): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of view.markers) if (m.kind === "shrink" && m.applied && m.targetEntryId !== undefined) out.set(m.targetEntryId, m.markerId);
  return out;
}

/** The state line of a call, from its view: what was done to it, then how it is sent when that differs. */
export function callStateText(call: CallView, marks: CallMarks = {}): string {
  let text: string;
  switch (call.state) {
    case "summarized":
      text = `summarized${call.shortRef ? ` (ref ${call.shortRef})` : ""}`;
      break;
    case "superseded":
      text = `superseded by ${call.supersededBy ?? "a later call"}${call.shortRef ? ` (ref ${call.shortRef})` : ""}`;
      break;
    case "deduped":
      text = `deduplicated${call.aliasOf ? ` (same output as ${call.aliasOf})` : ""}`;
      break;
    case "spilled":
      text = `spilled to disk${call.shortRef ? ` (ref ${call.shortRef})` : ""}`;
      break;
    case "compressed":
      text = `compressed${call.chainBlockId ? ` (chain ${call.chainBlockId})` : ""}`;
      break;
    case "protected":
      text = call.protectedBy?.kind === "tool" ? `protected (tool ${call.protectedBy.name})` : `protected (${call.protectedBy?.pattern ?? "path"})`;
      break;
    case "raw":
      text = "raw";
      break;
  }
  if (call.isError) text += ", an error";
  const rewind = [call.assistantEntryId, call.resultEntryId].map((id) => (id !== undefined ? marks.rewound?.get(id) : undefined)).find((m) => m !== undefined);
  if (rewind !== undefined && call.state !== "protected") text += `; in the span the agent's rewind ${rewind} hides`;
  const shrink = call.resultEntryId !== undefined ? marks.shrunk?.get(call.resultEntryId) : undefined;
  if (shrink !== undefined) text += `; shrunk by the agent (${shrink})`;
  return call.sent ? `${text}; ${call.sent.text}` : text;
}

/** How `call` names the file, when it does. */
function matchOf(call: CallView, wanted: { absolute: string; relative?: string }, cwd: string | undefined): FileCallMatch | undefined {
  for (const value of [call.path, typeof call.args.file_path === "string" ? call.args.file_path : undefined]) {
    if (value === undefined) continue;
    const resolved = resolvedPath(value, cwd);
    if (resolved !== undefined ? resolved === wanted.absolute : wanted.relative !== undefined && normalise(value) === wanted.relative) return "path";
  }
  if (call.command !== undefined) {
    const command = call.command.replace(/\\/g, "/");
    if (mentions(command, wanted.absolute)) return "command";
    // A relative mention means the file only for a session run where the workspace resolves it.
    const relativeToCwd = cwd && wanted.absolute.startsWith(`${normalise(cwd)}/`) ? wanted.absolute.slice(normalise(cwd).length + 1) : undefined;
    const relative = relativeToCwd ?? (cwd === undefined ? wanted.relative : undefined);
    if (relative && mentions(command, relative)) return "command";
  }
  return undefined;
}

/**
 * Every call on the session's branch that names the file, in branch order. `rewound` (from
 * rewoundEntries of the branch shown) marks the calls an active rewind hides.
 */
export function callsNamingFile(view: Pick<SessionView, "calls" | "session" | "markers">, file: FileQuery, rewound?: ReadonlyMap<string, string>): FileCall[] {
  const wanted = { absolute: normalise(file.absolute), ...(file.relative !== undefined ? { relative: normalise(file.relative) } : {}) };
  const cwd = view.session.cwd;
  const hiding = new Set(view.markers.filter((m) => m.kind === "rewind" && m.state === "active" && m.hiddenMessages > 0).map((m) => m.markerId));
  const applied = rewound ? new Map([...rewound].filter(([, id]) => hiding.has(id))) : undefined;
  const marks: CallMarks = { shrunk: shrunkEntries(view), ...(applied ? { rewound: applied } : {}) };
  const out: FileCall[] = [];
  for (const call of view.calls) {
    const match = matchOf(call, wanted, cwd);
    if (match) out.push({ call, match, stateText: callStateText(call, marks) });
  }
  return out;
}
