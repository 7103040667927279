// What a rewound span did to the world, read from its tool calls rather than from the model's
// account of it: the files it read, the files it changed and the shell commands that may have had
// side effects. Hiding a span does not undo any of that, so the note shows it to the agent.
import type { AgentMessage } from "../shapes/messages.ts";
import { toolCallsOf } from "../shapes/messages.ts";
import type { FileLedger } from "./control-entries.ts";

/** Tools whose path argument names something looked at. */
const READ_TOOLS = new Set(["read", "grep", "find", "ls", "glob", "rg", "cat", "view"]);
/** Tools whose path argument names a file they change. */
const WRITE_TOOLS = new Set(["write", "edit", "multi_edit", "multiedit", "apply_patch"]);
const SHELL_TOOLS = new Set(["bash", "shell", "sh"]);

/** A side-effecting command is listed by its first line, cut to this many characters. */
const COMMAND_CHARS = 200;

/**
 * The ledger of the tool calls in `messages` (a hidden span, in order). Paths come from the calls'
 * `path` (or `file_path`) arguments; an absolute path inside `cwd` is shown relative to it. Every
 * list is sorted and free of duplicates. Never throws.
 *
 * Shell commands (a `bash` call, or a command the person ran with `!`) are listed under
 * bashSideEffects unless they are provably read-only (see isReadOnlyCommand); the target of a write
 * redirect (`>`, `>>`, `&>`, `tee FILE`) also counts as a modified file.
 */
export function extractLedger(messages: readonly AgentMessage[], cwd?: string): FileLedger {
  const read = new Set<string>();
  const modified = new Set<string>();
  const effects = new Set<string>();
  const path = (raw: unknown) => (typeof raw === "string" && raw.trim() !== "" ? displayPath(raw.trim(), cwd) : undefined);
  const shell = (command: string) => {
    if (command.trim() === "" || isReadOnlyCommand(command)) return;
    effects.add(commandLine(command));
    for (const target of writeTargets(command)) modified.add(displayPath(target, cwd));
  };

  for (const message of messages) {
    if (message.role === "bashExecution") {
      if (typeof message.command === "string") shell(message.command);
      continue;
    }
    for (const call of toolCallsOf(message)) {
      const args = call.arguments && typeof call.arguments === "object" ? call.arguments : {};
      const name = typeof call.name === "string" ? call.name : "";
      if (READ_TOOLS.has(name)) {
        const p = path(args.path ?? args.file_path);
        if (p) read.add(p);
      } else if (WRITE_TOOLS.has(name)) {
        const p = path(args.path ?? args.file_path);
        if (p) modified.add(p);
      } else if (SHELL_TOOLS.has(name) && typeof args.command === "string") {
        shell(args.command);
      }
    }
  }
  const sorted = (set: Set<string>) => [...set].sort();
  return { readFiles: sorted(read), modifiedFiles: sorted(modified), bashSideEffects: sorted(effects) };
}

/** Whether the span changed files or ran a command that may have changed something. */
export function hasMutations(ledger: FileLedger): boolean {
  return ledger.modifiedFiles.length > 0 || ledger.bashSideEffects.length > 0;
}

function displayPath(path: string, cwd: string | undefined): string {
  if (!cwd) return path;
  const base = cwd.replace(/[\\/]+$/, "");
  if (path.startsWith(`${base}/`) || path.startsWith(`${base}\\`)) return path.slice(base.length + 1) || ".";
  return path;
}

function commandLine(command: string): string {
  const lines = command.trim().split("\n");
  let line = lines[0]!.trim();
  const more = lines.length > 1;
  if (line.length > COMMAND_CHARS) line = `${line.slice(0, COMMAND_CHARS)}…`;
  else if (more) line = `${line} …`;
  return line;
}

// ---- the shell heuristic ----
//
// A command is read-only when every simple command in it (split on `;`, `&&`, `||`, `|`, `&` and
// new lines, outside quotes) is one of a short list of commands that only print (READ_ONLY, plus
// `git` with a read-only subcommand, `find` without -delete/-exec, `sed` without -i, `sort` without
// -o), no output goes to a file (a redirect to /dev/null is fine), and every `$(…)` or backquoted
// command inside is read-only by the same rule. Anything else — rm, mv, cp, mkdir, git commit,
// npm install, a test run, a script, an unknown command — counts as a possible side effect: a
// missed write is the dangerous mistake, a false alarm only a line in the note.

const READ_ONLY = new Set([
  "ls", "cat", "head", "tail", "less", "more", "wc", "nl", "tac", "grep", "egrep", "fgrep", "rg", "ag",
  "tree", "file", "stat", "du", "df", "pwd", "echo", "printf", "which", "whereis", "type", "whoami", "id",
  "uname", "date", "uniq", "cut", "tr", "diff", "cmp", "comm", "basename", "dirname", "realpath",
  "readlink", "jq", "true", "false", "test", "[", "[[", "sleep", "cd", "pushd", "popd", "printenv",
  "column", "fold", "rev", "seq", "hostname", "nproc", "free", "uptime", "md5sum", "sha1sum", "sha256sum",
  "xxd", "hexdump", "od", "strings", "env", "export", "set", "unset", "local", "declare", "read",
  "find", "sed", "sort", "git",
]);

const GIT_READ_ONLY = new Set([
  "status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
  "shortlog", "cat-file", "rev-list", "reflog", "whatchanged", "name-rev", "merge-base", "check-ignore",
  "version", "help",
]);

/** Words that only structure a script: what follows them is the command. */
const SHELL_KEYWORDS = new Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "(", ")", "time", "esac"]);
/** Wrappers that run the command after them (their own options skipped). */
const WRAPPERS = new Set(["sudo", "nice", "nohup", "command", "builtin", "exec", "timeout", "stdbuf"]);

const NULL_DEVICES = new Set(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"]);

/** Whether a shell command provably changes nothing (see the rule above). */
export function isReadOnlyCommand(command: string): boolean {
  for (const inner of substitutions(command)) if (!isReadOnlyCommand(inner)) return false;
  if (writeTargets(command).length > 0) return false;
  if (/<\(|>\(/.test(command)) return false; // process substitution: unsure
  for (const words of splitCommands(command)) {
    const simple = commandOf(words);
    if (!simple) continue;
    const { name, args } = simple;
    if (name === "for") continue; // a loop header; its body is the following segments
    if (!READ_ONLY.has(name)) return false;
    if (name === "env" && args.some((a) => !a.startsWith("-") && !a.includes("="))) return false; // env runs a command
    if (name === "find" && args.some((a) => /^-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/.test(a))) return false;
    if (name === "sed" && args.some((a) => /^--in-place/.test(a) || /^-[a-zA-Z]*i/.test(a))) return false;
    if (name === "sort" && args.some((a) => /^(-o|--output)/.test(a))) return false;
    if (name === "hostname" && args.some((a) => !a.startsWith("-"))) return false;
    if (name === "date" && args.some((a) => /^(-s|--set)/.test(a))) return false;
    if (name === "git" && !isReadOnlyGit(args)) return false;
  }
  return true;
}

/** The command a simple command runs (keywords, variable assignments and wrappers skipped) and its arguments. */
function commandOf(words: readonly string[]): { name: string; args: string[] } | undefined {
  let i = 0;
  while (i < words.length && (SHELL_KEYWORDS.has(words[i]!) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!))) i++;
  while (i < words.length && WRAPPERS.has(words[i]!)) {
    i++;
    while (i < words.length && (words[i]!.startsWith("-") || /^\d+(\.\d+)?[smhd]?$/.test(words[i]!))) i++;
  }
  if (i >= words.length) return undefined;
  return { name: words[i]!.replace(/^.*\//, ""), args: words.slice(i + 1) };
}

function isReadOnlyGit(args: string[]): boolean {
  let i = 0;
  // Global options, some with a value (`-C dir`, `-c key=value`).
  while (i < args.length && args[i]!.startsWith("-")) i += args[i] === "-C" || args[i] === "-c" ? 2 : 1;
  const sub = args[i];
  if (sub === undefined) return true;
  const rest = args.slice(i + 1);
  if (GIT_READ_ONLY.has(sub)) return !(sub === "diff" && rest.some((a) => a.startsWith("--output")));
  // Listing forms of commands that can also change things.
  const listing = rest.length === 0 || rest.every((a) => /^(-a|-r|-v|-vv|--list|-l|--all|--remotes|--verbose|--show-current|--contains|--merged|--no-merged)$/.test(a));
  if (sub === "branch" || sub === "tag" || sub === "remote") return listing;
  if (sub === "stash") return rest[0] === "list" || rest[0] === "show";
  if (sub === "config") return rest.some((a) => a === "--get" || a === "--list" || a === "-l" || a === "--get-all");
  return false;
}

/** The simple commands of a command line, split outside quotes; each as its words (quotes and redirects removed). */
function splitCommands(command: string): string[][] {
  const segments: string[][] = [];
  let words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  const endWord = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  const endSegment = () => {
    endWord();
    const kept = withoutRedirects(words);
    if (kept.length > 0) segments.push(kept);
    words = [];
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"' && i + 1 < command.length) word += command[++i];
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
      continue;
    }
    if (c === "\\" && i + 1 < command.length) {
      if (command[i + 1] === "\n") {
        i++;
        continue;
      }
      word += command[++i];
      inWord = true;
      continue;
    }
    if (c === "#" && !inWord) {
      while (i + 1 < command.length && command[i + 1] !== "\n") i++;
      continue;
    }
    if (c === ";" || c === "\n" || c === "|" || c === "&") {
      // `2>&1` and `&>` belong to redirects, not to command separators.
      if (c === "&" && (command[i - 1] === ">" || command[i + 1] === ">")) {
        word += c;
        inWord = true;
        continue;
      }
      endSegment();
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      endWord();
      continue;
    }
    if (c === "(" || c === ")") {
      if (command[i - 1] === "$") {
        word += c;
        inWord = true;
        continue;
      }
      endWord();
      continue;
    }
    word += c;
    inWord = true;
  }
  endSegment();
  return segments;
}

/** Words with redirections (`2>&1`, `> out`, `<in`) left out: they are judged by writeTargets. */
function withoutRedirects(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const redirect = /^(\d*|&)(>>?|>\||<<?<?|<>)(.*)$/.exec(words[i]!);
    if (!redirect) out.push(words[i]!);
    else if (redirect[3] === "" && !words[i]!.startsWith("<<")) i++; // the operator stands alone: its target is the next word
  }
  return out;
}

/** The files a command line writes by redirection or `tee`, outside quotes; /dev/null and the like left out. */
function writeTargets(command: string): string[] {
  const targets: string[] = [];
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"') i++;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      continue;
    }
    if (c === "\\") {
      i++;
      continue;
    }
    if (c !== ">") continue;
    if (command[i + 1] === "(") continue; // process substitution, judged elsewhere
    let j = i + 1;
    if (command[j] === ">" || command[j] === "|") j++;
    if (command[j] === "&") {
      // `>&2`, `>&-` duplicate a descriptor; `>&file` (rare) writes a file.
      if (/[0-9-]/.test(command[j + 1] ?? "")) {
        i = j + 1;
        continue;
      }
      j++;
    }
    while (command[j] === " " || command[j] === "\t") j++;
    const target = readWord(command, j);
    i = Math.max(i, j + target.length - 1);
    if (target.text !== "" && !NULL_DEVICES.has(target.text)) targets.push(target.text);
  }
  for (const words of splitCommands(command)) {
    const simple = commandOf(words);
    if (simple?.name !== "tee") continue;
    for (const arg of simple.args) if (!arg.startsWith("-") && !NULL_DEVICES.has(arg)) targets.push(arg);
  }
  return targets;
}

/** One shell word from `at`: its text with quotes removed, and how many characters it spans. */
function readWord(command: string, at: number): { text: string; length: number } {
  let text = "";
  let j = at;
  let quote: "'" | '"' | undefined;
  for (; j < command.length; j++) {
    const c = command[j]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else text += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      continue;
    }
    if (/[\s;|&<>()]/.test(c)) break;
    text += c;
  }
  return { text, length: j - at };
}

/** The commands inside `$(…)` and backquotes (which run even inside double quotes), outermost first. */
function substitutions(command: string): string[] {
  const out: string[] = [];
  let single = false;
  let double = false;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (single) {
      if (c === "'") single = false;
      continue;
    }
    if (c === "\\") {
      i++;
    } else if (c === "'" && !double) {
      single = true;
    } else if (c === '"') {
      double = !double;
    } else if (c === "$" && command[i + 1] === "(" && command[i + 2] !== "(") {
      let depth = 1;
      let j = i + 2;
      for (; j < command.length && depth > 0; j++) {
        if (command[j] === "(") depth++;
        else if (command[j] === ")") depth--;
      }
      out.push(command.slice(i + 2, depth === 0 ? j - 1 : j));
      i = j - 1;
    } else if (c === "`") {
      const end = command.indexOf("`", i + 1);
      out.push(command.slice(i + 1, end < 0 ? undefined : end));
      if (end < 0) break;
      i = end;
    }
  }
  return out;
}
