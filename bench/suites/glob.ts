// Figure 4: glob matching for file decorations — 100,000 workspace paths against 10 patterns
// through core's createPathMatcher vs. raw minimatch with precompiled Minimatch objects (same
// options, same first-match semantics). Both must agree on every path.
import { Minimatch, type MinimatchOptions } from "minimatch";
import { createPathMatcher } from "../../core/src/settings/protection.ts";
import { Rng } from "../lib/gen.ts";
import { collectGarbage, spread, threadCpuMs, timeMs } from "../lib/stats.ts";
import { figure, newSuite, spreadFigure, type SuiteOutput } from "../lib/results.ts";
import { barChart } from "../lib/svg.ts";

export const PATTERNS = [
  "**/skills/**/*.md",
  "**/SKILL.md",
  "docs/**/*.md",
  "*.md",
  "src/**/*.test.ts",
  "**/.env*",
  "config/*.json",
  "**/secrets/**",
  "scripts/?*.sh",
  "**/*.{pem,key}",
];

// The options core compiles every pattern with (core/src/protected.ts).
const OPTIONS: MinimatchOptions = { dot: true, nonegate: true, nocomment: true, windowsPathsNoEscape: true, platform: "linux" };

const DIRS = ["src", "test", "docs", "lib", "packages", "scripts", "config", "node_modules", ".agents", "assets", "tools", "examples"];
const SUB = ["core", "ui", "api", "utils", "render", "session", "cache", "cli", "server", "client", "model", "view", "store", "hooks", "types"];
const EXT = [".ts", ".ts", ".ts", ".tsx", ".js", ".json", ".md", ".css", ".test.ts", ".snap", ".map", ".sh", ".env", ".pem"];

export function workspacePaths(count: number, seed = 3): string[] {
  const rng = new Rng(seed);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = rng.next();
    if (r < 0.01) {
      out.push(`.agents/skills/${rng.pick(SUB)}-${rng.int(1, 40)}/${rng.chance(0.5) ? "SKILL.md" : `ref/${rng.pick(SUB)}.md`}`);
      continue;
    }
    if (r < 0.02) {
      out.push(rng.pick([".env", ".env.local", "config/app.json", "config/db.json", "README.md", "CHANGELOG.md", "secrets/prod.key", "scripts/build.sh"]));
      continue;
    }
    const depth = rng.int(1, 6);
    const parts = [rng.pick(DIRS)];
    for (let d = 1; d < depth; d++) parts.push(rng.chance(0.2) ? `${rng.pick(SUB)}-${rng.int(1, 99)}` : rng.pick(SUB));
    parts.push(`${rng.pick(SUB)}${rng.int(0, 999)}${rng.pick(EXT)}`);
    out.push(parts.join("/"));
  }
  return out;
}

export interface GlobOptions {
  quick: boolean;
  log: (line: string) => void;
}

export async function runGlob(options: GlobOptions): Promise<SuiteOutput> {
  const out = newSuite();
  const paths = workspacePaths(100_000);
  const matcher = createPathMatcher(PATTERNS);
  const compiled = PATTERNS.map((p) => new Minimatch(p, OPTIONS));
  const raw = (path: string): string | undefined => {
    for (let i = 0; i < compiled.length; i++) if (compiled[i]!.match(path)) return PATTERNS[i];
    return undefined;
  };
  // Same answers, path by path.
  let matched = 0;
  for (const p of paths) {
    const a = matcher(p);
    if (a !== raw(p)) throw new Error(`createPathMatcher and minimatch disagree on ${p}: ${a} vs ${raw(p)}`);
    if (a) matched++;
  }
  const rounds = options.quick ? 5 : 15;
  const ours: number[] = [];
  const theirs: number[] = [];
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  let sink = 0;
  for (let r = 0; r < rounds; r++) {
    collectGarbage();
    const cpu = { ours: 0, raw: 0 };
    const runOurs = () => {
      const c0 = threadCpuMs();
      const ms = timeMs(() => {
        for (const p of paths) if (matcher(p)) sink++;
      });
      cpu.ours = threadCpuMs() - c0;
      return ms;
    };
    const runRaw = () => {
      const c0 = threadCpuMs();
      const ms = timeMs(() => {
        for (const p of paths) if (raw(p)) sink++;
      });
      cpu.raw = threadCpuMs() - c0;
      return ms;
    };
    // Alternate the order so neither side always runs on a warmer machine.
    const [a, b] = r % 2 === 0 ? [runOurs(), runRaw()] : (() => { const y = runRaw(); const x = runOurs(); return [x, y]; })();
    ours.push(a);
    theirs.push(b);
    ratios.push(a / b);
    cpuRatios.push(cpu.ours / Math.max(1, cpu.raw));
  }
  if (sink < 0) out.notes.push("unreachable");
  const checks = paths.length * PATTERNS.length;
  out.figures["glob.createPathMatcher"] = spreadFigure(spread(ours), "ms", { note: "100,000 paths × 10 patterns, first match" });
  out.figures["glob.minimatch"] = spreadFigure(spread(theirs), "ms", { note: "precompiled Minimatch objects, same options" });
  out.figures["glob.ratio"] = spreadFigure(spread(ratios), "ratio", { target: { op: "<=", value: 1 }, note: "createPathMatcher ÷ minimatch, paired rounds" });
  out.figures["glob.ratioCpu"] = spreadFigure(spread(cpuRatios), "ratio", { note: "the same in CPU time of the thread (tick-granular: a few ms per round)" });
  out.figures["glob.perMillionChecks"] = figure((spread(ours).median / checks) * 1e6, "ms per million path×pattern checks");
  // Reached only when every path got the same answer from both (the loop above stops otherwise).
  out.figures["glob.sameAnswers"] = figure(paths.length, "paths", { note: "paths on which createPathMatcher and minimatch name the same first pattern (any difference stops the suite)" });
  out.figures["glob.matchedPaths"] = figure(matched, "paths", { note: "of 100,000 matched at least one pattern" });
  out.data = { rounds, ours, theirs, ratios, patterns: PATTERNS, matched };
  options.log(`glob: createPathMatcher ${spread(ours).median.toFixed(1)} ms vs minimatch ${spread(theirs).median.toFixed(1)} ms (×${spread(ratios).median.toFixed(2)}), ${matched} paths matched`);
  out.charts["glob.svg"] = barChart({
    title: "100,000 paths × 10 patterns (median of rounds, whiskers min–max)",
    yLabel: "milliseconds",
    labels: (v) => `${v.toFixed(0)} ms`,
    groups: [
      { label: "core createPathMatcher", bars: [{ name: "time", value: spread(ours).median, min: spread(ours).min, max: spread(ours).max }] },
      { label: "minimatch, precompiled", bars: [{ name: "time", value: spread(theirs).median, min: spread(theirs).min, max: spread(theirs).max }] },
    ],
  });
  return out;
}
