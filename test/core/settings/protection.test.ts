import { createRequire } from "node:module";
import fc from "fast-check";
import { Minimatch } from "minimatch";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../../core/src/settings/config.ts";
import {
  braceExpansionCount,
  checkGlobPattern,
  createPathMatcher,
  GLOB_BOUNDS,
  globPatternProblem,
  isProtected,
  matchesAnyPattern,
  normalizePathForMatch,
  protectingPattern,
  protectionReason,
} from "../../../core/src/settings/protection.ts";

const SKILLS = "**/skills/**/*.md";
const defaults = { protectedTools: [] as string[], protectedPaths: [SKILLS] };

describe("glob contract", () => {
  it("`**/skills/**/*.md` matches `skills/a/SKILL.md`", () => {
    expect(protectingPattern("skills/a/SKILL.md", [SKILLS])).toBe(SKILLS);
  });

  it("`**/skills/**/*.md` matches `./.agents/skills/x/ref.md`", () => {
    expect(protectingPattern("./.agents/skills/x/ref.md", [SKILLS])).toBe(SKILLS);
  });

  it("`**/skills/**/*.md` matches `/home/u/.agents/skills/x/SKILL.md`", () => {
    expect(protectingPattern("/home/u/.agents/skills/x/SKILL.md", [SKILLS])).toBe(SKILLS);
  });

  it("`**/skills/**/*.md` matches `C:\\u\\skills\\x\\SKILL.md`", () => {
    expect(protectingPattern("C:\\u\\skills\\x\\SKILL.md", [SKILLS])).toBe(SKILLS);
  });

  it("`**/skills/**/*.md` matches the forward-slash drive path `C:/u/skills/x/SKILL.md`", () => {
    expect(protectingPattern("C:/u/skills/x/SKILL.md", [SKILLS])).toBe(SKILLS);
  });

  it("`**/SKILL.md` matches bare `SKILL.md`", () => {
    expect(protectingPattern("SKILL.md", ["**/SKILL.md"])).toBe("**/SKILL.md");
    expect(protectingPattern("./SKILL.md", ["**/SKILL.md"])).toBe("**/SKILL.md");
  });

  it("`*` never crosses `/`", () => {
    expect(matchesAnyPattern("a.md", ["*.md"])).toBe(true);
    expect(matchesAnyPattern("docs/a.md", ["*.md"])).toBe(false);
    expect(matchesAnyPattern("docs/x/a.md", ["docs/*.md"])).toBe(false);
    expect(matchesAnyPattern("docs/a.md", ["docs/*.md"])).toBe(true);
  });

  it("`?` never crosses `/`", () => {
    expect(matchesAnyPattern("a/b", ["a?b"])).toBe(false);
    expect(matchesAnyPattern("a\\b", ["a?b"])).toBe(false);
    expect(matchesAnyPattern("axb", ["a?b"])).toBe(true);
  });

  it("a non-string or missing `path` is never protected", () => {
    for (const args of [{}, { path: 5 }, { path: null }, { path: ["skills/a/SKILL.md"] }, { file_path: "skills/a/SKILL.md" }, null, undefined, "skills/a/SKILL.md", 7]) {
      expect(isProtected("read", args, defaults)).toBe(false);
    }
    expect(protectingPattern(undefined, [SKILLS])).toBeUndefined();
    expect(protectingPattern("", ["**"])).toBeUndefined();
  });

  it("`[]` turns path protection off", () => {
    expect(isProtected("read", { path: "skills/a/SKILL.md" }, { protectedTools: [], protectedPaths: [] })).toBe(false);
    expect(protectingPattern("skills/a/SKILL.md", [])).toBeUndefined();
  });

  it("a tool name in protectedTools protects regardless of args", () => {
    const config = { protectedTools: ["todo"], protectedPaths: [] };
    for (const args of [undefined, null, {}, { path: "src/x.ts" }, "text"]) {
      expect(isProtected("todo", args, config)).toBe(true);
      expect(protectionReason("todo", args, config)).toEqual({ kind: "tool", name: "todo" });
    }
    expect(isProtected("read", {}, config)).toBe(false);
  });
});

describe("matching details", () => {
  it("is case-sensitive, drive letters included", () => {
    expect(matchesAnyPattern("skills/a/skill.MD", [SKILLS])).toBe(false);
    expect(matchesAnyPattern("Skills/a/x.md", [SKILLS])).toBe(false);
    expect(matchesAnyPattern("C:/u/a.md", ["C:/u/*.md"])).toBe(true);
    expect(matchesAnyPattern("c:/u/a.md", ["C:/u/*.md"])).toBe(false);
  });

  it("matches the whole path, not a substring", () => {
    expect(matchesAnyPattern("skills/a/SKILL.md.bak", [SKILLS])).toBe(false);
    expect(matchesAnyPattern("src/skills/a/SKILL.md", ["skills/**/*.md"])).toBe(false);
    expect(matchesAnyPattern("skills/a/SKILL.md", ["skills/**/*.md"])).toBe(true);
  });

  it("`**` matches zero directories and dot directories", () => {
    expect(matchesAnyPattern("skills/SKILL.md", [SKILLS])).toBe(true);
    expect(matchesAnyPattern(".agents/.hidden/skills/.x/SKILL.md", [SKILLS])).toBe(true);
  });

  it("normalises backslashes in patterns too", () => {
    expect(matchesAnyPattern("docs/a.md", ["docs\\*.md"])).toBe(true);
    expect(matchesAnyPattern("docs\\a.md", ["docs\\*.md"])).toBe(true);
  });

  it("strips a leading `./` from patterns as from paths", () => {
    expect(matchesAnyPattern("docs/a.md", ["./docs/*.md"])).toBe(true);
    expect(matchesAnyPattern("./docs/a.md", ["docs/*.md"])).toBe(true);
  });

  it("resolves `.` and `dir/..` segments and repeated slashes before matching", () => {
    expect(normalizePathForMatch("./a/./b//c/../d.md")).toBe("a/b/d.md");
    expect(normalizePathForMatch("C:\\u\\..\\..\\x.md")).toBe("C:/x.md");
    expect(normalizePathForMatch("/../a")).toBe("/a");
    expect(matchesAnyPattern("a/skills/./x/SKILL.md", [SKILLS])).toBe(true);
    expect(matchesAnyPattern("docs/../.agents/skills/x/SKILL.md", [SKILLS])).toBe(true);
    expect(matchesAnyPattern("skills/../notes/x.md", [SKILLS])).toBe(false);
  });

  it("a path that climbs out with `..` still matches `**`-anchored patterns, not relative ones", () => {
    expect(matchesAnyPattern("../other/skills/x/SKILL.md", [SKILLS])).toBe(true);
    expect(matchesAnyPattern("../../skills/x/SKILL.md", [SKILLS])).toBe(true);
    expect(matchesAnyPattern("../skills/x/SKILL.md", ["skills/**"])).toBe(false);
    expect(matchesAnyPattern("../skills/x/SKILL.md", ["../skills/**"])).toBe(true);
  });

  it("a leading `!` or `#` is literal, never a negation or a comment", () => {
    expect(matchesAnyPattern("src/a.ts", ["!*.md"])).toBe(false);
    expect(matchesAnyPattern("!a.md", ["!*.md"])).toBe(true);
    expect(matchesAnyPattern("#notes.md", ["#*.md"])).toBe(true);
  });

  it("supports braces", () => {
    expect(matchesAnyPattern("docs/a.txt", ["docs/*.{md,txt}"])).toBe(true);
  });

  it("an invalid pattern never throws and matches nothing", () => {
    const tooLong = "a".repeat(70_000);
    const weird = ["[", "***", "a{b", "+(", "", "\\", tooLong];
    for (const pattern of weird) {
      expect(() => protectingPattern("a/b.md", [pattern])).not.toThrow();
    }
    expect(protectingPattern("a/b.md", [tooLong, "**/*.md"])).toBe("**/*.md");
    expect(protectingPattern("x", [""])).toBeUndefined();
  });

  it("reports the first matching pattern", () => {
    expect(protectingPattern("skills/a/SKILL.md", ["**/*.ts", "**/SKILL.md", SKILLS])).toBe("**/SKILL.md");
    expect(protectionReason("read", { path: "skills/a/SKILL.md" }, defaults)).toEqual({ kind: "path", pattern: SKILLS });
    expect(protectionReason("read", { path: "src/a.ts" }, defaults)).toBeUndefined();
  });

  it("picks up a changed pattern list without any invalidation", () => {
    const config = { protectedTools: [], protectedPaths: [SKILLS] };
    expect(isProtected("read", { path: "docs/a.md" }, config)).toBe(false);
    config.protectedPaths = ["docs/**"];
    expect(isProtected("read", { path: "docs/a.md" }, config)).toBe(true);
  });
});

describe("createPathMatcher", () => {
  it("agrees with protectingPattern", () => {
    const patterns = [SKILLS, "**/SKILL.md", "docs/*.md"];
    const match = createPathMatcher(patterns);
    for (const path of ["skills/a/SKILL.md", "SKILL.md", "docs/a.md", "docs/x/a.md", "src/a.ts", "C:\\u\\skills\\x\\y.md", "../q/skills/a.md"]) {
      expect(match(path)).toBe(protectingPattern(path, patterns));
    }
    expect(createPathMatcher([])("skills/a/SKILL.md")).toBeUndefined();
  });

  it("names the same first pattern as minimatch itself, whatever the glob's shape", () => {
    // Patterns whose last portion is literal, starts or ends with literal text, is an extglob, a
    // class, or `**`, with literal directories or none: the quick rejection must never drop a match.
    const patterns = ["**/.env*", "*.c++", "**/a/**", "x/@(a|b).md", "[ab]*.md", "**/SKILL.md", "docs/", "?*.sh", "a/!(b).md", "**/*.{md,txt}", "src/**", "*"];
    const options = { dot: true, nonegate: true, nocomment: true, windowsPathsNoEscape: true, platform: "linux" as const };
    const minimatches = patterns.map((p) => new Minimatch(p, options));
    const paths = [".env", "a/.env.local", "f.c++", "x/a.md", "x/c.md", "a.md", "b/x.md", "q/SKILL.md", "SKILL.mdx", "docs/", "docs", "s.sh", ".sh", "a/c.md", "a/b.md", "z/y.txt", "src/", "src/a", "a/", "q/a/r", "plain"];
    for (let first = 0; first < patterns.length; first++) {
      const list = patterns.slice(first);
      const match = createPathMatcher(list);
      for (const path of paths) {
        const expected = list.find((_, i) => minimatches[first + i]!.match(path));
        expect(match(path), `${path} against ${list.join(" ")}`).toBe(expected);
      }
    }
  });

  it("matches 100,000 workspace-relative paths quickly", () => {
    const paths: string[] = [];
    for (let i = 0; i < 100_000; i++) paths.push(`src/dir${i % 100}/sub${i % 7}/file${i}.${i % 3 === 0 ? "md" : "ts"}`);
    for (let i = 0; i < 100; i++) paths[i * 1000] = `.agents/skills/s${i}/SKILL.md`;
    const match = createPathMatcher([SKILLS]);
    const started = performance.now();
    let protectedCount = 0;
    for (const path of paths) if (match(path) !== undefined) protectedCount++;
    const elapsed = performance.now() - started;
    expect(protectedCount).toBe(100);
    expect(elapsed).toBeLessThan(2000);
  });
});

describe("a pattern from a settings file is compiled only within bounds", () => {
  // `{a,b}` twenty times, then `c`: a million brace expansions, a second or more to compile unbounded.
  const HOSTILE = `${"{a,b}".repeat(20)}c`;
  const options = { dot: true, nonegate: true, nocomment: true, windowsPathsNoEscape: true, platform: "linux" as const };
  // The minimatch that core compiles with (the repository root may hold another version).
  const coreMinimatch = createRequire(new URL("../../../core/src/settings/protection.ts", import.meta.url))("minimatch") as typeof import("minimatch");

  it("a pattern whose braces expand a million ways is refused with one warning naming it; the rest of the list stays", () => {
    const { config, warnings } = resolveConfig(undefined, { protectedPaths: [HOSTILE, "docs/**"] });
    expect(config.protectedPaths).toEqual(["docs/**"]);
    expect(warnings).toEqual([
      {
        key: "contextPrune.protectedPaths",
        message: `contextPrune.protectedPaths: ${JSON.stringify(HOSTILE)} ignored: its braces expand to 1,048,576 patterns (at most 64)`,
        source: "project",
      },
    ]);
  });

  it("compiling the refused pattern returns at once and it matches nothing, in every matcher", () => {
    // A path the pattern would match if it were compiled (its first expansion).
    const path = `${"a".repeat(20)}c`;
    expect(createPathMatcher([HOSTILE])(path)).toBeUndefined();
    expect(protectingPattern(path, [HOSTILE, "**/*c"])).toBe("**/*c");
    expect(isProtected("read", { path }, { protectedTools: [], protectedPaths: [HOSTILE] })).toBe(false);
    expect(globPatternProblem(HOSTILE)).toBe("its braces expand to 1,048,576 patterns (at most 64)");
  });

  it("counts brace expansions as minimatch's braceExpand makes them, without making them", () => {
    // Random text over the characters that mean something to brace expansion (unbalanced braces,
    // `${`, empty alternatives, ranges with steps and padding, `[{]` included), and nested groups.
    const pieces = ["{", "}", ",", "..", ".", "a", "b", "Z", "0", "1", "2", "-", "$", "[", "]", "/", "*", "{1..3}", "{a..c}", "{Z..a}", "{,}", "{a,b}", "{3..-1..2}", "{01..3}", "[{]"];
    const text = fc.array(fc.constantFrom(...pieces), { maxLength: 16 }).map((parts) => parts.join(""));
    const { group } = fc.letrec((tie) => ({
      group: fc.oneof({ depthSize: "small" }, fc.constantFrom("", "a", "bc", "1..3", "x/"), tie("choice"), tie("row")),
      choice: fc.array(tie("group"), { minLength: 1, maxLength: 4 }).map((parts) => `{${parts.join(",")}}`),
      row: fc.array(tie("group"), { minLength: 1, maxLength: 3 }).map((parts) => parts.join("")),
    }));
    fc.assert(
      fc.property(fc.oneof(text, group as fc.Arbitrary<string>), (pattern) => {
        const expanded = coreMinimatch.braceExpand(pattern, options).length;
        // braceExpand stops at 100,000 strings; the count goes on.
        if (expanded < 100_000) expect(braceExpansionCount(pattern)).toBe(expanded);
      }),
      { numRuns: 3000 },
    );
    expect(braceExpansionCount("{a,b}{1..10}{x,{y,z}}")).toBe(60);
    expect(braceExpansionCount(HOSTILE)).toBe(2 ** 20);
  });

  it("accepts realistic patterns, which still match as minimatch does", () => {
    const realistic = [
      SKILLS,
      "src/{a,b,c}/**",
      "**/*.{ts,tsx,js}",
      "**/!(*.test).ts",
      "{src,lib,test,tests,spec}/**/*.{ts,tsx,js,jsx}",
      "{apps,packages}/*/{src,lib}/**/*.{ts,tsx,js,jsx,json}",
      "**/!(*.@(test|spec)).ts",
      "fixtures/case{1..50}/**",
      "**/.env*",
      "!(node_modules)/**/*.md",
    ];
    const paths = ["src/a/x.ts", "src/d/x.ts", "lib/x.tsx", "x.test.ts", "src/x.spec.ts", "src/x.ts", "apps/web/src/y.json", "fixtures/case7/z", "fixtures/case51/z", ".env.local", "node_modules/a/b.md", "docs/a.md", ".agents/skills/s/SKILL.md"];
    for (const pattern of realistic) {
      expect(checkGlobPattern(pattern).problem, pattern).toBeUndefined();
      const minimatch = new coreMinimatch.Minimatch(pattern, options);
      const match = createPathMatcher([pattern]);
      for (const path of paths) expect(match(path) !== undefined, `${pattern} against ${path}`).toBe(minimatch.match(path));
    }
    expect(resolveConfig(undefined, { protectedPaths: realistic }).warnings).toEqual([]);
  });

  it("refuses a pattern just past each bound and accepts one at it", () => {
    const atAndPast: Array<[string, string, string]> = [
      ["a".repeat(GLOB_BOUNDS.length), "a".repeat(GLOB_BOUNDS.length + 1), "it is 1,025 characters long (at most 1,024)"],
      [`**/${"{a,b}".repeat(6)}`, `**/${"{a,b}".repeat(7)}`, "its braces expand to 128 patterns (at most 64)"],
      ["x{1..64}.md", "x{1..65}.md", "its braces expand to 65 patterns (at most 64)"],
      [`${"{a,".repeat(8)}b${"}".repeat(8)}`, `${"{a,".repeat(9)}b${"}".repeat(9)}`, "it nests braces 9 deep (at most 8)"],
      ["@(a)".repeat(8), "@(a)".repeat(9), "it has 9 extglobs (at most 8)"],
      ["!(@(+(a)))", "!(@(+(*(a))))", "it nests extglobs 4 deep (at most 3)"],
    ];
    for (const [at, past, problem] of atAndPast) {
      expect(globPatternProblem(at), at).toBeUndefined();
      expect(globPatternProblem(past), past).toBe(problem);
      expect(createPathMatcher([past])("a")).toBeUndefined();
    }
  });

  it("a 100,000-character path against accepted patterns of every shape gets the right answers", () => {
    // One literal portion of the widest accepted brace pattern occurs in the path (as part of a
    // longer portion), so the quick rejection lets it through and minimatch walks all 64 rows.
    const path = `aaaaaaX/${"a/".repeat(50_000)}b.md`;
    const expected: Array<[string, boolean]> = [
      [SKILLS, false],
      ["**/a/**/b.md", true],
      ["**/a/**/a/**/a/**/x.md", false],
      [`**/${"{a,b}".repeat(6)}/**/b.md`, false],
      ["**/!(*.test).md", true],
      [`${"*/".repeat(40)}**/b.md`, true],
      ["**/+(a|b)/**/@(b|c).md", true],
    ];
    for (const [pattern, matches] of expected) {
      expect(globPatternProblem(pattern), pattern).toBeUndefined();
      expect(createPathMatcher([pattern])(path) !== undefined, pattern).toBe(matches);
    }
  });
});
