// Protection: a tool call is never pruned when its tool name is in `protectedTools` or its
// `args.path` matches a `protectedPaths` glob. The globs come from settings files, and a project's
// file comes with whatever repository is cloned, so a pattern is compiled only within bounds.
import { Minimatch, type MinimatchOptions } from "minimatch";
import { formatNumber } from "../shapes/size.ts";

/** The settings protection reads (the same fields as in PruneConfig). */
export interface ProtectionConfig {
  protectedTools: string[];
  protectedPaths: string[];
}

export type ProtectionReason = { kind: "tool"; name: string } | { kind: "path"; pattern: string };

const MATCH_OPTIONS: MinimatchOptions = {
  dot: true,
  // A leading `!` or `#` is literal: a negated pattern would protect everything else.
  nonegate: true,
  nocomment: true,
  windowsPathsNoEscape: true,
  // The same answers on every host (VS Code on Windows included): `/` is the only separator
  // and drive letters are case-sensitive like the rest of the path.
  platform: "linux",
};

const MAX_CACHED_PATTERNS = 1000;
// A pattern that cannot be used (empty, past the bounds, or one minimatch refuses) is kept as
// null: it matches nothing.
const compiledPatterns = new Map<string, Minimatch | null>();

function stripLeadingDotSlash(path: string): string {
  let result = path;
  while (result.startsWith("./")) result = result.slice(2);
  return result;
}

/** The pattern as it is compiled: `\` is a separator like `/`, and a leading `./` says nothing. */
function normalizePattern(pattern: string): string {
  return stripLeadingDotSlash(pattern.replaceAll("\\", "/"));
}

// ---------------------------------------------------------------------------------------------
// Bounds, checked before a pattern is compiled
//
// minimatch expands a pattern's braces into one row per expansion, compiles each row, and tests a
// path against every row: `{a,b}` twenty times over is a million rows, a second or more to compile.
// Its matcher does not backtrack (extglobs included: it runs them as a state machine, and `**`
// remembers where it has been), so with the rows bounded a match stays linear in the path's length.

export const GLOB_BOUNDS = {
  /** Characters in a pattern; real paths are far shorter. It also caps the work of the checks. */
  length: 1024,
  /** Expansions of the braces (`{a,b}` 2, `{1..10}` 10, `{a,b}/{c,d}` 4): rows a path is tested against. */
  expansions: 64,
  /** Braces inside braces: it caps the work of counting the expansions. */
  braceDepth: 8,
  /** Extglobs (`+(…)`, `*(…)`, `?(…)`, `@(…)`, `!(…)`), and how deep they nest in one another. */
  extglobs: 8,
  extglobDepth: 3,
  /** Expansions of a whole protectedPaths list together (checked where settings are read). */
  listExpansions: 1024,
} as const;

export interface GlobPatternCheck {
  /** Rows the pattern compiles to at most (its brace expansions); 0 when it is refused early. */
  expansions: number;
  /** Why the pattern is refused, as a clause ("its braces expand to …"), or undefined. */
  problem: string | undefined;
}

/**
 * Whether a protectedPaths pattern is within GLOB_BOUNDS, and how many rows it compiles to. Cheap
 * (linear in the pattern, which is at most GLOB_BOUNDS.length long) and never throws.
 */
export function checkGlobPattern(pattern: string): GlobPatternCheck {
  const refuse = (problem: string, expansions = 0): GlobPatternCheck => ({ expansions, problem });
  if (pattern.length > GLOB_BOUNDS.length) return refuse(`it is ${formatNumber(pattern.length)} characters long (at most ${formatNumber(GLOB_BOUNDS.length)})`);
  const normalized = normalizePattern(pattern);
  const braceDepth = deepestBraces(normalized);
  if (braceDepth > GLOB_BOUNDS.braceDepth) return refuse(`it nests braces ${braceDepth} deep (at most ${GLOB_BOUNDS.braceDepth})`);
  const extglobs = extglobShape(normalized);
  if (extglobs.count > GLOB_BOUNDS.extglobs) return refuse(`it has ${extglobs.count} extglobs (at most ${GLOB_BOUNDS.extglobs})`);
  if (extglobs.depth > GLOB_BOUNDS.extglobDepth) return refuse(`it nests extglobs ${extglobs.depth} deep (at most ${GLOB_BOUNDS.extglobDepth})`);
  const expansions = braceExpansionCount(normalized);
  if (expansions > GLOB_BOUNDS.expansions) {
    const told = expansions >= EXPANSION_CEILING ? `more than ${formatNumber(EXPANSION_CEILING)}` : formatNumber(expansions);
    return refuse(`its braces expand to ${told} patterns (at most ${GLOB_BOUNDS.expansions})`, expansions);
  }
  return { expansions, problem: undefined };
}

/** checkGlobPattern's reason for refusing `pattern`, or undefined when it may be compiled. */
export function globPatternProblem(pattern: string): string | undefined {
  return checkGlobPattern(pattern).problem;
}

// `[{]` and `[}]` are how minimatch writes a literal brace when `\` is a separator: not a group.
const LITERAL_BRACE_CLASS = /\[([{}])\]/g;

/** How deep `{` nest, counted plainly (an unclosed `{` counts too, so this is never too low). */
function deepestBraces(pattern: string): number {
  const text = pattern.replace(LITERAL_BRACE_CLASS, "[_]");
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 123) deepest = Math.max(deepest, ++depth);
    else if (c === 125 && depth > 0) depth--;
  }
  return deepest;
}

/** Extglob openers (`+(` and the like) and how deep they nest; openers inside classes count too. */
function extglobShape(pattern: string): { count: number; depth: number } {
  let total = 0;
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if ("+*?@!".includes(c) && pattern[i + 1] === "(") {
      total++;
      deepest = Math.max(deepest, ++depth);
      i++;
    } else if (c === ")" && depth > 0) {
      depth--;
    }
  }
  return { count: total, depth: deepest };
}

// ---------------------------------------------------------------------------------------------
// Counting brace expansions without expanding
//
// The same walk as minimatch's brace expansion (the brace-expansion package, quirks included):
// groups left to right, a product over the groups in a row, a sum over a group's alternatives, a
// range by its size. It yields the number of strings braceExpand would return, without making them.

/** Counts stop growing here; anything this large is far past the bound anyway. */
const EXPANSION_CEILING = 1e12;
// brace-expansion's own limits on nesting and on its `{a},b}` rewrite.
const MAX_EXPANSION_DEPTH = 1000;
const MAX_REWRITES = 1000;
/** Stands for a brace the library escaped (a literal one): a character with no meaning to the walk. */
const LITERAL = "\u0000";
const NUMERIC_RANGE = /^-?\d+\.\.-?\d+(?:\.\.-?\d+)?$/;
const ALPHABETIC_RANGE = /^[a-zA-Z]\.\.[a-zA-Z](?:\.\.-?\d+)?$/;

/** What one stretch of pattern expands to: a count, or the strings themselves (STRINGS, needed only for `{{…}}`). */
interface ExpansionAlgebra<T> {
  one(text: string): T;
  /** Every `acc` string, then `pre`, then every value, empty results dropped when asked. */
  product(acc: T, pre: string, values: T, dropEmpty: boolean): T;
  /** The alternatives of a group, one after another, empty ones dropped when asked. */
  sum(parts: readonly T[], dropEmpty: boolean): T;
  range(body: string, alphabetic: boolean): T;
  allEmpty(set: T): boolean;
}

interface Counted {
  count: number;
  /** How many of the strings are empty: brace-expansion drops empty results at the top. */
  empty: number;
}

const cap = (n: number) => Math.min(n, EXPANSION_CEILING);

const COUNTING: ExpansionAlgebra<Counted> = {
  one: (text) => ({ count: 1, empty: text === "" ? 1 : 0 }),
  product(acc, pre, values, dropEmpty) {
    const count = cap(acc.count * values.count);
    // Past the ceiling the empties are forgotten: dropping none can only count more.
    const empty = pre === "" && count < EXPANSION_CEILING ? acc.empty * values.empty : 0;
    return dropEmpty ? { count: count - empty, empty: 0 } : { count, empty };
  },
  sum(parts, dropEmpty) {
    let total = 0;
    let empty = 0;
    for (const part of parts) {
      total = cap(total + part.count);
      empty += part.empty;
    }
    if (total >= EXPANSION_CEILING) return { count: total, empty: 0 };
    return dropEmpty ? { count: total - empty, empty: 0 } : { count: total, empty };
  },
  range(body, alphabetic) {
    const { from, to, step } = rangeBounds(body, alphabetic);
    const size = cap(Math.floor(Math.abs(to - from) / step) + 1);
    // The library turns a `\` in a letter range into an empty value.
    const backslash = 92;
    const hitsBackslash = alphabetic && backslash >= Math.min(from, to) && backslash <= Math.max(from, to) && Math.abs(backslash - from) % step === 0;
    return { count: size, empty: hitsBackslash ? 1 : 0 };
  },
  allEmpty: (set) => set.count < EXPANSION_CEILING && set.empty === set.count,
};

/** More strings than expandStrings makes: the pattern is then counted as past every bound. */
class TooManyStrings extends Error {}
const STRING_LIMIT = 1024;

function limited(strings: string[]): string[] {
  if (strings.length > STRING_LIMIT) throw new TooManyStrings();
  return strings;
}

const STRINGS: ExpansionAlgebra<string[]> = {
  one: (text) => [text],
  product(acc, pre, values, dropEmpty) {
    if (acc.length * values.length > STRING_LIMIT) throw new TooManyStrings();
    const out: string[] = [];
    for (const a of acc) {
      for (const v of values) {
        const joined = a + pre + v;
        if (!dropEmpty || joined !== "") out.push(joined);
      }
    }
    return out;
  },
  sum: (parts, dropEmpty) => limited(parts.flat().filter((s) => !dropEmpty || s !== "")),
  range(body, alphabetic) {
    const { from, to, step, width, padded } = rangeBounds(body, alphabetic);
    if (Math.floor(Math.abs(to - from) / step) + 1 > STRING_LIMIT) throw new TooManyStrings();
    const out: string[] = [];
    const direction = to < from ? -1 : 1;
    for (let i = from; direction > 0 ? i <= to : i >= to; i += step * direction) {
      if (alphabetic) {
        const c = String.fromCharCode(i);
        out.push(c === "\\" ? "" : c);
        continue;
      }
      let digits = String(i);
      const need = width - digits.length;
      if (padded && need > 0) digits = i < 0 ? `-${"0".repeat(need)}${digits.slice(1)}` : "0".repeat(need) + digits;
      out.push(digits);
    }
    return out;
  },
  allEmpty: (set) => set.every((s) => s === ""),
};

function rangeBounds(body: string, alphabetic: boolean): { from: number; to: number; step: number; width: number; padded: boolean } {
  const parts = body.split("..");
  const [first = "", second = "", third] = parts;
  const value = (part: string) => (alphabetic ? part.charCodeAt(0) : Number.parseInt(part, 10));
  return {
    from: value(first),
    to: value(second),
    step: third === undefined ? 1 : Math.max(Math.abs(Number.parseInt(third, 10)), 1),
    width: Math.max(first.length, second.length),
    padded: parts.some((part) => /^-?0\d/.test(part)),
  };
}

/** The first balanced `{…}` as brace-expansion's balanced-match finds it (not always the first `{`). */
function firstGroup(text: string): { pre: string; body: string; post: string } | undefined {
  let open = text.indexOf("{");
  let close = text.indexOf("}", open + 1);
  if (open < 0 || close <= 0) return undefined;
  const opens: number[] = [];
  let left = text.length;
  let right: number | undefined;
  let found: [number, number] | undefined;
  let i = open;
  while (i >= 0 && found === undefined) {
    if (i === open) {
      opens.push(i);
      open = text.indexOf("{", i + 1);
    } else if (opens.length === 1) {
      found = [opens.pop()!, close];
    } else {
      const start = opens.pop()!;
      if (start < left) {
        left = start;
        right = close;
      }
      close = text.indexOf("}", i + 1);
    }
    i = open < close && open >= 0 ? open : close;
  }
  if (found === undefined && opens.length > 0 && right !== undefined) found = [left, right];
  if (found === undefined) return undefined;
  return { pre: text.slice(0, found[0]), body: text.slice(found[0] + 1, found[1]), post: text.slice(found[1] + 1) };
}

/** A group's body split at its own commas (not those of groups inside it). */
function commaParts(body: string): string[] {
  const parts: string[] = [];
  let carry = "";
  let rest = body;
  for (;;) {
    const group = firstGroup(rest);
    if (group === undefined) {
      const tail = rest.split(",");
      tail[0] = carry + tail[0];
      for (const part of tail) parts.push(part);
      return parts;
    }
    const pieces = group.pre.split(",");
    pieces[0] = carry + pieces[0];
    pieces[pieces.length - 1] += `{${group.body}}`;
    if (group.post === "") {
      for (const piece of pieces) parts.push(piece);
      return parts;
    }
    carry = pieces.pop()!;
    for (const piece of pieces) parts.push(piece);
    rest = group.post;
  }
}

function expandGroups<T>(algebra: ExpansionAlgebra<T>, text: string, depth: number, isTop: boolean): T {
  if (depth > MAX_EXPANSION_DEPTH) return algebra.one(text);
  const none = algebra.one("");
  let acc = none;
  let rest = text;
  let top = isTop;
  let rewrites = 0;
  let dropEmpty = false;
  let first = true;
  for (;;) {
    const group = firstGroup(rest);
    if (group === undefined) return algebra.product(acc, rest, none, dropEmpty);
    const { pre, body, post } = group;
    const last = post === "";
    if (pre.endsWith("$")) {
      // `${…}` is left as it is.
      acc = algebra.product(acc, `${pre}{${body}}`, none, dropEmpty && last);
      first = false;
      if (last) return acc;
      rest = post;
      continue;
    }
    const alphabetic = ALPHABETIC_RANGE.test(body);
    const isRange = alphabetic || NUMERIC_RANGE.test(body);
    if (!isRange && !body.includes(",")) {
      // `{a},b}` reads as `{a\},b}`; otherwise a group without a comma is literal, and so is the rest.
      if (rewrites < MAX_REWRITES && /,(?!,).*\}/.test(post)) {
        rewrites++;
        rest = `${pre}{${body}${LITERAL}${post}`;
        top = true;
        continue;
      }
      return algebra.product(acc, `${pre}{${body}}${post}`, none, dropEmpty);
    }
    if (first) {
      dropEmpty = top && !isRange;
      first = false;
    }
    let values: T;
    if (isRange) {
      values = algebra.range(body, alphabetic);
    } else {
      let parts = commaParts(body);
      if (parts.length === 1) {
        // `{{a,b}c}`: the one alternative is expanded, and each result expanded again inside braces;
        // that needs the results themselves, so only here are strings made (STRING_LIMIT at most).
        const inner = expandGroups(STRINGS, parts[0]!, depth + 1, false);
        if (inner.length === 1) {
          acc = algebra.product(acc, `${pre}{${inner[0]}}`, none, dropEmpty && last);
          if (last) return acc;
          rest = post;
          continue;
        }
        parts = inner.map((result) => `{${result}}`);
      }
      const dropEmptyValues = dropEmpty && last && pre === "" && algebra.allEmpty(acc);
      values = algebra.sum(
        parts.map((part) => expandGroups(algebra, part, depth + 1, false)),
        dropEmptyValues,
      );
    }
    acc = algebra.product(acc, pre, values, dropEmpty && last);
    if (last) return acc;
    rest = post;
  }
}

/**
 * How many strings minimatch's braceExpand makes of `pattern` (a pattern as compiled: `/` for
 * `\`), counted without making them; capped at a trillion.
 */
export function braceExpansionCount(pattern: string): number {
  // minimatch's own shortcut: without a `{…}` there is nothing to expand.
  if (!/\{(?:(?!\{).)*\}/.test(pattern)) return 1;
  let text = pattern.replace(LITERAL_BRACE_CLASS, `[${LITERAL}]`);
  // Like Bash, brace-expansion leaves a leading `{}` as it is.
  if (text.startsWith("{}")) text = LITERAL + LITERAL + text.slice(2);
  try {
    return expandGroups(COUNTING, text, 0, true).count;
  } catch (error) {
    if (error instanceof TooManyStrings) return EXPANSION_CEILING;
    throw error;
  }
}

function compilePattern(pattern: string): Minimatch | null {
  if (checkGlobPattern(pattern).problem !== undefined) return null;
  const normalized = normalizePattern(pattern);
  if (normalized === "") return null;
  try {
    return new Minimatch(normalized, MATCH_OPTIONS);
  } catch {
    // An unusable pattern (too long, for one) protects nothing rather than breaking a render.
    return null;
  }
}

/** The compiled pattern, compiled on first use and cached by pattern string. */
function compiled(pattern: string): Minimatch | null {
  let matcher = compiledPatterns.get(pattern);
  if (matcher === undefined) {
    if (compiledPatterns.size >= MAX_CACHED_PATTERNS) compiledPatterns.clear();
    matcher = typeof pattern === "string" ? compilePattern(pattern) : null;
    compiledPatterns.set(pattern, matcher);
  }
  return matcher;
}

/** One pattern against one path; a match that throws is no match rather than a broken render. */
function test(matcher: Minimatch | null, path: string): boolean {
  if (matcher === null) return false;
  try {
    return matcher.match(path);
  } catch {
    return false;
  }
}

/** A backslash, `//`, or a `.` or `..` segment: the only things normalisation changes. */
const NEEDS_NORMALIZING = /\\|\/\/|(?:^|\/)\.\.?(?:\/|$)/;

/**
 * The path as the matcher sees it: `\` → `/`, `.` segments and `dir/..` pairs resolved, repeated
 * slashes collapsed. Leading `..` segments are kept (there is nothing to resolve them against).
 */
export function normalizePathForMatch(path: string): string {
  // Most paths are already normal: no backslash, no empty, `.` or `..` segment. Those come back
  // as they are, without splitting and joining (this runs per path in decorations and per call in views).
  if (!NEEDS_NORMALIZING.test(path)) return path;
  const slashed = path.replaceAll("\\", "/");
  const isAbsolute = slashed.startsWith("/");
  const segments: string[] = [];
  for (const segment of slashed.split("/")) {
    if (segment === "" || segment === ".") continue;
    const previous = segments[segments.length - 1];
    const previousIsDrive = segments.length === 1 && /^[A-Za-z]:$/.test(previous ?? "");
    if (segment === ".." && previous !== undefined && previous !== ".." && !previousIsDrive) segments.pop();
    else if (segment === ".." && previousIsDrive) continue;
    else if (segment === ".." && isAbsolute) continue;
    else segments.push(segment);
  }
  const trailingSlash = slashed.endsWith("/") && segments.length > 0 ? "/" : "";
  return (isAbsolute ? "/" : "") + segments.join("/") + trailingSlash;
}

/**
 * minimatch's `**` never matches a `..` segment, even with `dot`. A path that climbs out of the
 * working directory (`../x/skills/a/SKILL.md`) is treated like an absolute path whose root is
 * unknown: after a direct attempt, it is matched once more with the `..` run replaced by `/`,
 * so `**`-anchored patterns still catch it and relative-anchored ones still do not.
 */
function pathCandidates(normalizedPath: string): string[] {
  if (!normalizedPath.startsWith("../") && normalizedPath !== "..") return [normalizedPath];
  const withoutClimb = normalizedPath.replace(/^(\.\.\/)+/, "");
  return [normalizedPath, `/${withoutClimb === ".." ? "" : withoutClimb}`];
}

function firstMatchingPattern(candidates: readonly string[], patterns: readonly string[], matchers: readonly (Minimatch | null)[]): string | undefined {
  for (let index = 0; index < matchers.length; index++) {
    const matcher = matchers[index]!;
    for (const candidate of candidates) {
      if (test(matcher, candidate)) return patterns[index];
    }
  }
  return undefined;
}

/** The first pattern that matches `path`, or undefined. A non-string or empty path matches nothing. */
export function protectingPattern(path: unknown, patterns: readonly string[]): string | undefined {
  if (typeof path !== "string" || path === "" || patterns.length === 0) return undefined;
  return pathMatcherFor(patterns)(path);
}

// Views and renders ask about every call with the same pattern list: its matcher is kept with it
// (and made again if the list was changed in place).
const matchers = new WeakMap<readonly string[], { patterns: readonly string[]; match: (path: string) => string | undefined }>();

/** createPathMatcher for this list, made once per list. */
export function pathMatcherFor(patterns: readonly string[]): (path: string) => string | undefined {
  const known = matchers.get(patterns);
  if (known && known.patterns.length === patterns.length && known.patterns.every((p, i) => p === patterns[i])) return known.match;
  const match = createPathMatcher(patterns);
  matchers.set(patterns, { patterns: patterns.slice(), match });
  return match;
}

export function matchesAnyPattern(path: unknown, patterns: readonly string[]): boolean {
  return protectingPattern(path, patterns) !== undefined;
}

// Characters that may have a meaning in a path portion's glob; a literal one among them only
// makes the literal text found shorter, never wrong.
const PORTION_MAGIC = /[*?[\]()|+@!{}\\]/;
const SLASH = 47;
const DOT = 46;

/** The literal text a glob portion ends with (`*.test.ts` → `.test.ts`): every match ends with it. */
function literalTail(portion: string): string {
  let start = portion.length;
  while (start > 0 && !PORTION_MAGIC.test(portion[start - 1]!)) start--;
  return start === 0 ? "" : portion.slice(start);
}

/** The literal text a glob portion starts with (`.env*` → `.env`): every match starts with it. */
function literalHead(portion: string): string {
  let end = 0;
  while (end < portion.length && !PORTION_MAGIC.test(portion[end]!)) end++;
  return end === portion.length ? "" : portion.slice(0, end);
}

/**
 * What a path must have for one row of a compiled pattern to match it — the checks minimatch
 * makes itself before it splits a path: each literal portion somewhere in the path, and the last
 * portion matching the path's last one (here only its literal text: equal, or as a suffix).
 */
interface RowNeeds {
  literals: string[];
  /** The path's last portion must equal this (`SKILL.md`). */
  name?: string;
  /** The path must end with this (`.md` from `*.md`). */
  suffix?: string;
  /** The path's last portion must start with this (`.env` from `.env*`). */
  prefix?: string;
}

/**
 * The rows of a pattern as cheap requirements, or undefined when they cannot be derived (then
 * every path goes to minimatch). A path that meets no row's requirements cannot match the pattern.
 */
function rowNeeds(matcher: Minimatch): RowNeeds[] | undefined {
  const { set, globParts } = matcher;
  if (set.length === 0 || set.length !== globParts.length) return undefined;
  const rows: RowNeeds[] = [];
  for (let r = 0; r < set.length; r++) {
    const row = set[r]!;
    const text = globParts[r]!;
    if (row.length !== text.length || row.length === 0) return undefined;
    const last = row[row.length - 1]!;
    const needs: RowNeeds = { literals: [] };
    for (let k = 0; k < row.length - 1; k++) {
      const portion = row[k]!;
      if (typeof portion === "string" && portion !== "") needs.literals.push(portion);
    }
    // A row ending in `**`, or in `/` (an empty portion), says nothing about the path's last portion.
    if (typeof last === "string") {
      if (last !== "") needs.name = last;
    } else if (typeof last === "object") {
      const tail = literalTail(text[text.length - 1]!);
      if (tail !== "") needs.suffix = tail;
      const head = literalHead(text[text.length - 1]!);
      if (head !== "") needs.prefix = head;
    }
    rows.push(needs);
  }
  return rows;
}

/** Whether `path` (normalised, not ending in `/`, not climbing out) meets one of the rows. */
function mayMatch(rows: readonly RowNeeds[], path: string): boolean {
  ROWS: for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    if (row.suffix !== undefined && !path.endsWith(row.suffix)) continue;
    if (row.prefix !== undefined && !path.startsWith(row.prefix, path.lastIndexOf("/") + 1)) continue;
    if (row.name !== undefined) {
      const start = path.length - row.name.length;
      if (start < 0 || !path.endsWith(row.name) || (start > 0 && path.charCodeAt(start - 1) !== SLASH)) continue;
    }
    for (let l = 0; l < row.literals.length; l++) if (!path.includes(row.literals[l]!)) continue ROWS;
    return true;
  }
  return false;
}

/**
 * normalizePathForMatch, with a cheaper first look: a path with no backslash, no `//` and no `.`
 * at the start of a portion is already normal.
 */
function normalizedForMatch(path: string): string {
  if (path.charCodeAt(0) !== DOT && !path.includes("/.") && !path.includes("//") && !path.includes("\\")) return path;
  return normalizePathForMatch(path);
}

/**
 * A matcher bound to one pattern list, for hot loops (file decorations over a whole workspace):
 * the compiled patterns are looked up once, not per path. Returns the first matching pattern.
 * Most paths match none of the patterns: a pattern is asked only when the path has what one of
 * its rows needs (its literal portions and the literal end of its last portion).
 */
export function createPathMatcher(patterns: readonly string[]): (path: string) => string | undefined {
  const ownPatterns = patterns.slice();
  const matchers = ownPatterns.map(compiled);
  // The hot loop visits only usable patterns, in order, and calls minimatch directly.
  const usable = matchers.flatMap((m, i) => (m === null ? [] : [i]));
  const liveMatchers = usable.map((i) => matchers[i]!);
  const livePatterns = usable.map((i) => ownPatterns[i]!);
  const liveNeeds = liveMatchers.map(rowNeeds);
  if (liveMatchers.length === 0) return () => undefined;
  return (path) => {
    if (typeof path !== "string" || path === "") return undefined;
    const normalized = normalizedForMatch(path);
    if (normalized.startsWith("..")) return firstMatchingPattern(pathCandidates(normalized), livePatterns, liveMatchers);
    // A trailing `/` lets a row's last portion match the portion before it: no quick rejection then.
    const checkNeeds = normalized.charCodeAt(normalized.length - 1) !== SLASH;
    // The common case, one candidate: no array per path, one try for all patterns; a throw
    // (which minimatch does not do on a string) falls back to asking each pattern on its own.
    try {
      for (let index = 0; index < liveMatchers.length; index++) {
        const needs = liveNeeds[index];
        if (checkNeeds && needs !== undefined && !mayMatch(needs, normalized)) continue;
        if (liveMatchers[index]!.match(normalized)) return livePatterns[index];
      }
      return undefined;
    } catch {
      return firstMatchingPattern([normalized], livePatterns, liveMatchers);
    }
  };
}

/** The `path` argument of a tool call, when it has a string one. */
export function toolCallPath(args: unknown): string | undefined {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  const path: unknown = (args as { path?: unknown }).path;
  return typeof path === "string" ? path : undefined;
}

export function protectionReason(toolName: string, args: unknown, config: ProtectionConfig): ProtectionReason | undefined {
  if (config.protectedTools.includes(toolName)) return { kind: "tool", name: toolName };
  const pattern = protectingPattern(toolCallPath(args), config.protectedPaths);
  return pattern === undefined ? undefined : { kind: "path", pattern };
}

export function isProtected(toolName: string, args: unknown, config: ProtectionConfig): boolean {
  return protectionReason(toolName, args, config) !== undefined;
}
