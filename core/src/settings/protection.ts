// Protection: a tool call is never pruned when its tool name is in `protectedTools` or its
// `args.path` matches a `protectedPaths` glob.
import { Minimatch, type MinimatchOptions } from "minimatch";
import type { PruneConfig } from "./config.ts";

export type ProtectionConfig = Pick<PruneConfig, "protectedTools" | "protectedPaths">;

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
// A pattern that cannot be used (empty, or one minimatch refuses) is kept as null: it matches nothing.
const compiledPatterns = new Map<string, Minimatch | null>();

function stripLeadingDotSlash(path: string): string {
  let result = path;
  while (result.startsWith("./")) result = result.slice(2);
  return result;
}

function compilePattern(pattern: string): Minimatch | null {
  const normalized = stripLeadingDotSlash(pattern.replaceAll("\\", "/"));
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
