// The calls of a session that name one file: a read, edit or write of it, a grep or find whose path
// is it, a bash command that mentions it. The path is matched as the session's cwd resolves it and
// as written (relative to the workspace, or absolute), so `src/a.ts`, `./src/a.ts` and
// `/work/src/a.ts` are one file for a session started in `/work`.
import { posix } from "node:path";
import type { CallView, SessionView } from "./session-view.ts";

/** The file asked about: its absolute path, and its path relative to the workspace folder holding it. */
export interface FileQuery {
  absolute: string;
  relative?: string;
}

export type FileCallMatch = "path" | "command";

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

/** The state line of a call, from its view: what was done to it, then how it is sent when that differs. */
export function callStateText(call: CallView): string {
  let text: string;
  switch (call.state) {
    case "summarized":
      text = `summarized${call.shortRef ? ` (ref ${call.shortRef})` : ""}`;
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

/** Every call on the session's branch that names the file, in branch order. */
export function callsNamingFile(view: Pick<SessionView, "calls" | "session">, file: FileQuery): FileCall[] {
  const wanted = { absolute: normalise(file.absolute), ...(file.relative !== undefined ? { relative: normalise(file.relative) } : {}) };
  const cwd = view.session.cwd;
  const out: FileCall[] = [];
  for (const call of view.calls) {
    const match = matchOf(call, wanted, cwd);
    if (match) out.push({ call, match, stateText: callStateText(call) });
  }
  return out;
}
