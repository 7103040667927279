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

/**
 * A matcher bound to one pattern list, for hot loops (file decorations over a whole workspace):
 * the compiled patterns are looked up once, not per path. Returns the first matching pattern.
 */
export function createPathMatcher(patterns: readonly string[]): (path: string) => string | undefined {
  const ownPatterns = patterns.slice();
  const matchers = ownPatterns.map(compiled);
  // The hot loop visits only usable patterns, in order, and calls minimatch directly.
  const usable = matchers.flatMap((m, i) => (m === null ? [] : [i]));
  const liveMatchers = usable.map((i) => matchers[i]!);
  const livePatterns = usable.map((i) => ownPatterns[i]!);
  if (liveMatchers.length === 0) return () => undefined;
  return (path) => {
    if (typeof path !== "string" || path === "") return undefined;
    const normalized = normalizePathForMatch(path);
    if (normalized.startsWith("..")) return firstMatchingPattern(pathCandidates(normalized), livePatterns, liveMatchers);
    // The common case, one candidate: no array per path, one try for all patterns; a throw
    // (which minimatch does not do on a string) falls back to asking each pattern on its own.
    try {
      for (let index = 0; index < liveMatchers.length; index++) if (liveMatchers[index]!.match(normalized)) return livePatterns[index];
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
