import { Minimatch } from "minimatch";
import { describe, expect, it } from "vitest";
import {
  createPathMatcher,
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
