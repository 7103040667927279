// What the summarizer is sent of one tool output. An output that fits the budget is sent whole;
// a longer one is cut down to the lines the agent needs later (the head and the tail, the lines
// that report errors, failures and warnings, a file's declarations, a search's paths), kept in
// their original order with a marker where lines were left out. A head cut alone would drop the
// end of a build log, where the errors and the failing tests are.

/** Lines kept for what they say (errors, declarations…) are cut to this many characters. */
const LINE_CAP = 300;
/**
 * Share of the budget the head and the tail get before anything else is chosen, by kind of
 * output: a search's paths and a file's declarations say more than its first lines.
 */
const EDGE_SHARES: Record<Kind, { head: number; tail: number }> = {
  output: { head: 0.2, tail: 0.15 },
  read: { head: 0.15, tail: 0.05 },
  search: { head: 0.05, tail: 0.05 },
  diff: { head: 0.1, tail: 0.05 },
};
/** Stack frames kept per run of them, and in all: the first frames locate a failure, the rest repeat. */
const STACK_FRAMES_PER_RUN = 3;
const STACK_FRAMES_TOTAL = 9;
/** Lines after an error that may hold its location (esbuild, vitest and rustc print it below); the line right after it, its message, is kept too. */
const LOCATION_REACH = 3;
/** Outputs of fewer lines than this are cut by characters: their lines are too long to choose among. */
const MIN_LINES = 4;
/** Below this budget there is no room for lines and markers: the output is cut by characters. */
const MIN_LINE_BUDGET = 100;

const CODE_FILE = /\.(?:[cm]?[jt]sx?|py|pyi|go|rs|java|kts?|scala|swift|c|cc|cpp|cxx|h|hh|hpp|cs|rb|php|lua|sh|bash|zsh|vue|svelte|astro|ex|exs|erl|hs|ml|mli|clj|dart|sql|proto|graphql|gql)$/i;
const SEARCH_TOOLS = new Set(["grep", "find", "ls", "glob", "rg"]);
const DIFF_COMMAND = /\bgit\s+(?:diff|show)\b|(?:^|&&|;)\s*diff\s/;
const SEARCH_COMMAND = /(?:^|&&|\|\||;|\|)\s*(?:rg|grep|egrep|fgrep|git\s+grep|ag|ack|find|fd|ls|git\s+ls-files)\b/;

// A line that reports an error or a failure: compiler and linter diagnostics (`error TS2322:`,
// `error[E0308]:`, `Error:`), exceptions, npm's `ERR!`, the marks test runners put on failures
// (`FAIL`, `✗`, `×`, `✕`, `●`, `not ok`, `--- FAIL:`), and failure counts in a run's summary.
const ERROR_PATTERNS = [
  /\berror\b[^:\n]{0,40}:/i,
  /^\s*(?:error|fatal|panic)\b/i,
  /\b[A-Z]\w*(?:Error|Exception)\b/,
  /\bERR!|\[ERROR\]|[✘✗×✕❌]/,
  /^\s*(?:FAIL|FAILED|FAILURE|not ok)\b|^\s*●\s|--- FAIL\b/,
  /^\s*\d+:\d+\s+error\b/,
  /\b(?:failed|failing|panicked)\b|Traceback \(most recent call last\)/i,
];
const WARNING = /\bwarn(?:ing)?\b[^:\n]{0,40}:|\[WARN(?:ING)?\]|⚠|^\s*warn(?:ing)?\b|^\s*\d+:\d+\s+warning\b/i;
/** A diagnostic of a linter's grouped format (`  12:5  error  …` under a line naming the file). */
const GROUPED_DIAGNOSTIC = /^\s*\d+:\d+\s+(?:error|warning)\b/i;
/** The same format's notes: their severity says they report nothing wrong, whatever their text says. */
const GROUPED_NOTE = /^\s*\d+:\d+\s+(?:info|hint|note|suggestion|off)\b/i;
const BARE_PATH = /^\S+\.[A-Za-z]\w{0,5}$/;
const DIFF_FILE = /^diff --git |^(?:\+\+\+|---) [ab]\//;
const DIFF_HUNK = /^@@ .* @@/;
/** `file.ts:12`, `file.ts:12:5`, `file.ts(12,5)`, `[file.ts:12:8]`, Python's `File "x.py", line 3`. */
const LOCATION = /[\w@.~-]+\.[A-Za-z]\w{0,5}(?::\d+(?::\d+)?|\(\d+,\d+\))|File "[^"]+", line \d+/;
const STACK_FRAME = /^\s*at\s.*[\w.]:\d+(?::\d+)?\)?\s*$|^\s*File "[^"]+", line \d+/;

// Top-level declarations (no indentation) of the languages an agent reads most.
const DECLARATION =
  /^(?:export\s+(?:default\b|\{|\*|(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|interface|type|const|let|var|enum|namespace|module)\b)|(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|interface|enum|namespace)\s+[\w$]|type\s+[\w$]+[^=]*=|(?:const|let|var)\s+[\w$[{][^=]*=|module\.exports\b|(?:async\s+)?def\s+\w|func\s|type\s+\w+\s+(?:struct|interface)\b|pub(?:\([\w:]+\))?\s+(?:async\s+)?(?:fn|struct|enum|trait|mod|type|const|static)\b|(?:fn|struct|enum|trait|impl|mod)\s+\w)/;
const MARKDOWN_FILE = /\.(?:md|mdx|markdown)$/i;
const MARKDOWN_HEADING = /^#{1,6}\s+\S/;
/** Of a match, what a search's cut line keeps after its path and location; and what a marker between such lines costs. */
const SEARCH_MATCH_CHARS = 24;
const SEARCH_GAP_COST = 16;
/** `path:12: text` (grep match) or `path-12- text` (grep context). */
const GREP_LINE = /^([^:\n]+?\.[^:\s]+|[^:\n]+?)(?::\d+:|-\d+-)/;

type Kind = "read" | "search" | "diff" | "output";

function kindOf(toolName: string, args: Record<string, unknown>, text: string): Kind {
  if (toolName === "read") return "read";
  if (SEARCH_TOOLS.has(toolName)) return "search";
  const command = args.command;
  if (typeof command === "string" && SEARCH_COMMAND.test(command)) return "search";
  if (text.startsWith("diff --git ") || (typeof command === "string" && DIFF_COMMAND.test(command))) return "diff";
  const path = args.path;
  if (typeof path === "string" && CODE_FILE.test(path)) return "read";
  return "output";
}

export function omittedMarker(lines: number): string {
  return `[… ${lines} line${lines === 1 ? "" : "s"} …]`;
}

function clipLine(line: string, cap: number): string {
  if (line.length <= cap) return line;
  const note = `…(+${line.length - cap} chars)`;
  return line.slice(0, Math.max(0, cap - note.length)) + note;
}

/** Cuts by characters (head and tail) for outputs of a few very long lines. */
function clipChars(text: string, budget: number): string {
  const marker = (n: number) => `\n[… ${n} characters …]\n`;
  const room = budget - marker(text.length).length;
  if (room <= 0) return text.slice(0, budget);
  const head = Math.ceil(room * 0.7);
  const tail = room - head;
  return `${text.slice(0, head)}${marker(text.length - room)}${tail > 0 ? text.slice(text.length - tail) : ""}`;
}

/**
 * The kept lines of an output and the exact length of their rendering: kept lines joined by
 * newlines, each run of left-out lines replaced by one marker line.
 */
class Selection {
  private readonly kept: number[] = [];
  private readonly text = new Map<number, string>();
  /** Sum over the rendering's items (kept lines and markers) of their length plus one newline. */
  private total: number;
  private readonly lineCount: number;
  private readonly budget: number;

  constructor(lineCount: number, budget: number) {
    this.lineCount = lineCount;
    this.budget = budget;
    this.total = this.markerCost(lineCount);
  }

  private markerCost(gap: number): number {
    return gap > 0 ? omittedMarker(gap).length + 1 : 0;
  }

  has(i: number): boolean {
    return this.text.has(i);
  }

  /** Characters still free. */
  room(): number {
    return this.budget - (this.total - 1);
  }

  /** The change in length if line `i` were kept as `rendered`. */
  private delta(i: number, rendered: string): number {
    let lo = 0;
    let hi = this.kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.kept[mid]! < i) lo = mid + 1;
      else hi = mid;
    }
    const prev = lo > 0 ? this.kept[lo - 1]! : -1;
    const next = lo < this.kept.length ? this.kept[lo]! : this.lineCount;
    return rendered.length + 1 + this.markerCost(i - prev - 1) + this.markerCost(next - i - 1) - this.markerCost(next - prev - 1);
  }

  /** Keeps line `i` if it fits the budget; says whether it did. */
  add(i: number, rendered: string): boolean {
    if (this.text.has(i)) return true;
    const delta = this.delta(i, rendered);
    if (this.total + delta - 1 > this.budget) return false;
    this.total += delta;
    this.text.set(i, rendered);
    let at = this.kept.length;
    while (at > 0 && this.kept[at - 1]! > i) at--;
    this.kept.splice(at, 0, i);
    return true;
  }

  /** Keeps line `i`, cut to whatever room is left; says whether anything of it fit. */
  addClipped(i: number, line: string, minimum: number): boolean {
    if (this.add(i, line)) return true;
    // The length changes one for one with the line's, so the overshoot is what comes off it.
    const cap = line.length - (this.delta(i, line) - this.room());
    if (cap < minimum) return false;
    return this.add(i, clipLine(line, cap));
  }

  render(): string {
    const out: string[] = [];
    let last = -1;
    for (const i of this.kept) {
      if (i > last + 1) out.push(omittedMarker(i - last - 1));
      out.push(this.text.get(i)!);
      last = i;
    }
    if (last < this.lineCount - 1) out.push(omittedMarker(this.lineCount - 1 - last));
    return out.join("\n");
  }
}

/**
 * When a search's first line per path would not all fit whole, each is cut to its path and
 * location and a little of the match, so that every path can be named.
 */
function searchLineCap(group: readonly number[], lines: readonly string[], room: number): (i: number) => number {
  const whole = group.reduce((n, i) => n + Math.min(lines[i]!.length, LINE_CAP) + SEARCH_GAP_COST, 0);
  if (whole <= room) return () => LINE_CAP;
  return (i) => Math.min(LINE_CAP, (GREP_LINE.exec(lines[i]!)?.[0].length ?? 0) + SEARCH_MATCH_CHARS);
}

function isError(line: string): boolean {
  return ERROR_PATTERNS.some((p) => p.test(line));
}

/** The lines worth keeping beyond the head and the tail, most important first, each group in output order. */
function rankedLines(kind: Kind, args: Record<string, unknown>, lines: readonly string[]): number[][] {
  if (kind === "read") {
    // A document's outline is its headings.
    const outline = typeof args.path === "string" && MARKDOWN_FILE.test(args.path) ? MARKDOWN_HEADING : DECLARATION;
    return [lines.flatMap((line, i) => (outline.test(line) ? [i] : []))];
  }
  if (kind === "diff") {
    const files: number[] = [];
    const hunks: number[] = [];
    lines.forEach((line, i) => {
      if (DIFF_FILE.test(line)) files.push(i);
      else if (DIFF_HUNK.test(line)) hunks.push(i);
    });
    return [files, hunks];
  }
  if (kind === "search") {
    // The first line of each path: a search's answer is where things are.
    const seen = new Set<string>();
    const firsts: number[] = [];
    lines.forEach((line, i) => {
      const path = (GREP_LINE.exec(line)?.[1] ?? line).trim();
      if (!path || seen.has(path)) return;
      seen.add(path);
      firsts.push(i);
    });
    return [firsts];
  }
  const errors: number[] = [];
  const secondary: number[] = [];
  let framesInRun = 0;
  let framesTotal = 0;
  let lastError = -Infinity;
  let lastPath = -1;
  let pathTaken = -1;
  lines.forEach((line, i) => {
    if (BARE_PATH.test(line)) lastPath = i;
    // A grouped diagnostic names only line and column: the file is the path line above it.
    if (lastPath >= 0 && lastPath !== pathTaken && GROUPED_DIAGNOSTIC.test(line)) {
      pathTaken = lastPath;
      errors.push(lastPath);
    }
    if (STACK_FRAME.test(line)) {
      framesInRun++;
      if (framesInRun <= STACK_FRAMES_PER_RUN && framesTotal < STACK_FRAMES_TOTAL) {
        framesTotal++;
        secondary.push(i);
      }
      return;
    }
    framesInRun = 0;
    if (GROUPED_NOTE.test(line)) return;
    if (GROUPED_DIAGNOSTIC.test(line) || isError(line)) {
      errors.push(i);
      lastError = i;
    } else if (WARNING.test(line) || (i - lastError <= LOCATION_REACH && (LOCATION.test(line) || (i === lastError + 1 && line.trim())))) secondary.push(i);
  });
  return [errors, secondary];
}

/**
 * The text the summarizer is sent for one tool output: the output itself when it has at most
 * `budgetChars` characters, else at most `budgetChars` characters of its most telling lines in
 * their original order, with `[… N lines …]` where lines were left out. A file read's kept lines
 * carry their line numbers. Deterministic.
 */
export function summarizerInput(toolName: string, args: Record<string, unknown>, text: string, budgetChars: number): string {
  const budget = Math.max(0, Math.floor(budgetChars));
  if (text.length <= budget) return text;
  const lines = text.split("\n");
  if (lines.length < MIN_LINES || budget < MIN_LINE_BUDGET) return clipChars(text, budget);
  const kind = kindOf(toolName, args, text);
  const shares = EDGE_SHARES[kind];
  const firstLine = kind === "read" && typeof args.offset === "number" && args.offset >= 1 ? Math.floor(args.offset) : 1;
  const shown = (i: number) => (kind === "read" ? `${firstLine + i}: ${lines[i]}` : lines[i]!);
  const selection = new Selection(lines.length, budget);

  // The head and the tail first, each up to its share.
  let head = 0;
  let used = 0;
  const headRoom = budget * shares.head;
  while (head < lines.length) {
    const rendered = clipLine(shown(head), LINE_CAP);
    if (used + rendered.length > headRoom && head > 0) break;
    if (!selection.add(head, rendered)) break;
    used += rendered.length + 1;
    head++;
  }
  let tail = lines.length - 1;
  used = 0;
  const tailRoom = budget * shares.tail;
  while (tail >= head) {
    const rendered = clipLine(shown(tail), LINE_CAP);
    if (used + rendered.length > tailRoom && tail < lines.length - 1) break;
    if (!selection.add(tail, rendered)) break;
    used += rendered.length + 1;
    tail--;
  }

  // Then what the lines say, group by group; a line repeated word for word (or already in the
  // head or the tail) is kept once.
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) if (selection.has(i)) seen.add(lines[i]!.trim());
  for (const group of rankedLines(kind, args, lines)) {
    const cap = kind === "search" ? searchLineCap(group, lines, selection.room()) : () => LINE_CAP;
    for (const i of group) {
      if (selection.has(i)) continue;
      const key = lines[i]!.trim();
      if (seen.has(key)) continue;
      if (selection.add(i, clipLine(shown(i), cap(i)))) seen.add(key);
    }
  }

  // What room is left goes to the head and the tail, about three to two.
  let headChars = 0;
  let tailChars = 0;
  let headOpen = true;
  let tailOpen = true;
  while ((headOpen || tailOpen) && selection.room() > 0) {
    while (head < lines.length && selection.has(head)) head++;
    while (tail >= 0 && selection.has(tail)) tail--;
    if (head > tail) break;
    const fromHead = headOpen && (!tailOpen || headChars * 2 <= tailChars * 3);
    const i = fromHead ? head : tail;
    const line = shown(i);
    if (selection.addClipped(i, line, 40)) {
      if (fromHead) headChars += line.length;
      else tailChars += line.length;
      continue;
    }
    if (fromHead) headOpen = false;
    else tailOpen = false;
  }
  return selection.render();
}
