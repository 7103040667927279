// Deterministic generator of coding-agent sessions: user prompts, assistant turns with thinking,
// and tool calls with realistic outputs (file reads, greps, builds, tests, edits, writes, a skill
// file, failures, re-reads of unchanged files, the odd huge build log). The same seed always gives
// the same session, byte for byte.

export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }
  /** Uniform in [0, 1) (mulberry32). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  weighted<T extends string>(weights: Readonly<Record<T, number>>): T {
    const entries = Object.entries(weights) as [T, number][];
    const total = entries.reduce((n, [, w]) => n + w, 0);
    let r = this.next() * total;
    for (const [key, w] of entries) {
      r -= w;
      if (r < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }
}

/** FNV-1a of a string: stable seeds for per-file content. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const WORDS = [
  "user", "session", "config", "render", "index", "cache", "token", "message", "record", "branch",
  "stats", "flush", "batch", "summary", "path", "glob", "entry", "parse", "stream", "buffer",
  "result", "error", "value", "count", "limit", "window", "frontier", "chain", "spill", "preview",
  "request", "response", "handler", "reader", "writer", "queue", "timer", "status", "model", "tool",
];
const TYPES = ["string", "number", "boolean", "Entry[]", "Map<string, Record>", "Promise<void>", "Buffer", "unknown"];
const PROSE = [
  "the", "reader", "keeps", "byte", "offsets", "so", "large", "bodies", "load", "on", "demand", "and",
  "a", "failing", "test", "points", "at", "the", "cache", "key", "which", "must", "include", "timestamp",
  "we", "should", "check", "whether", "the", "config", "merge", "is", "deep", "before", "changing", "render",
  "then", "run", "build", "again", "to", "see", "if", "error", "goes", "away", "maybe", "it", "was", "stale",
];

function ident(rng: Rng): string {
  const a = rng.pick(WORDS);
  const b = rng.pick(WORDS);
  return `${a}${b[0]!.toUpperCase()}${b.slice(1)}${rng.chance(0.3) ? rng.int(1, 9) : ""}`;
}

function codeLine(rng: Rng): string {
  switch (rng.int(0, 9)) {
    case 0:
      return `export function ${ident(rng)}(${ident(rng)}: ${rng.pick(TYPES)}, ${ident(rng)}: ${rng.pick(TYPES)}): ${rng.pick(TYPES)} {`;
    case 1:
      return `  const ${ident(rng)} = ${ident(rng)}(${ident(rng)}, ${rng.int(0, 4096)});`;
    case 2:
      return `  if (!${ident(rng)}.has(${ident(rng)})) return ${rng.pick(["undefined", "null", "false", "[]", "0"])};`;
    case 3:
      return `  for (const ${ident(rng)} of ${ident(rng)}.values()) ${ident(rng)}.push(${ident(rng)});`;
    case 4:
      return `import { ${ident(rng)}, ${ident(rng)} } from "./${rng.pick(WORDS)}.ts";`;
    case 5:
      return `  // ${prose(rng, rng.int(5, 14))}`;
    case 6:
      return `  ${ident(rng)}.${ident(rng)} = ${ident(rng)} ?? ${rng.int(0, 100)};`;
    case 7:
      return `  return { ${ident(rng)}, ${ident(rng)}: ${ident(rng)}.length };`;
    case 8:
      return "}";
    default:
      return `  await ${ident(rng)}.${ident(rng)}(${JSON.stringify(rng.pick(WORDS))});`;
  }
}

export function prose(rng: Rng, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(rng.pick(PROSE));
  return out.join(" ");
}

/** Text of about `chars` characters made of lines from `line`. */
function linesOf(rng: Rng, chars: number, line: (rng: Rng, i: number) => string): string {
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < chars; i++) {
    const l = line(rng, i);
    out.push(l);
    n += l.length + 1;
  }
  return out.join("\n");
}

function signature(rng: Rng): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let s = "";
  for (let i = 0; i < 88; i++) s += alphabet[rng.int(0, 63)];
  return s;
}

// ------------------------------------------------------------------------------------------------
// The script: what the user types and what the model answers; tool results come with each call.

export interface ScriptCall {
  /** The provider's tool-call id (recorded sessions); generated ones get fresh ids. */
  id?: string;
  name: string;
  args: Record<string, unknown>;
  result: string;
  isError: boolean;
  /** A label for reports: read, grep, build, test, edit, write, ls, skill, reread, spill. */
  kind: string;
}

export type ScriptStep =
  | { kind: "user"; text: string }
  | { kind: "assistant"; thinking?: string; thinkingSignature?: string; text?: string; calls: ScriptCall[] };

export interface CodingScriptOptions {
  seed: number;
  /** Thinking blocks on every assistant turn (default true). */
  thinking?: boolean;
  /** Tool turns per user task (inclusive range). */
  turnsPerTask?: [number, number];
  /** Multiplier on output sizes (default 1). */
  scale?: number;
  /** Chance that a build prints a huge log (spilled by the pruner). Default 0.02. */
  hugeLogChance?: number;
}

export const SKILL_PATH = ".agents/skills/release/SKILL.md";

const TASKS = [
  "Add a --json flag to the stats command and cover it with tests.",
  "The session reader is slow on big files; find out why and fix it.",
  "Rename the `frontier` module to `progress` everywhere, keeping the public API.",
  "Tests in test/cache are flaky. Investigate and make them deterministic.",
  "Prepare the release: follow the release skill, bump the version and update the changelog.",
  "Add a setting that limits how many refs a summary may list; validate it and document it.",
  "Users report a crash when a tool result has no content. Reproduce it and fix it.",
  "Refactor the render pipeline so each step is a separate function with its own unit tests.",
  "Make the CLI print sizes in tokens as well as characters.",
  "Port the glob matcher to handle Windows drive letters; add tests for the edge cases.",
  "Review the error handling in the summarizer and add an idle timeout.",
  "Write a migration for old index entries that lack content hashes.",
];

interface FileState {
  version: number;
  size: number;
}

/**
 * An endless coding session: tasks of several tool turns each, ending with a text reply. The
 * caller decides where to stop (after a number of assistant turns, messages or bytes).
 */
export function* codingScript(options: CodingScriptOptions): Generator<ScriptStep> {
  const rng = new Rng(options.seed);
  const withThinking = options.thinking ?? true;
  const [minTurns, maxTurns] = options.turnsPerTask ?? [12, 36];
  const scale = options.scale ?? 1;
  const hugeLogChance = options.hugeLogChance ?? 0.02;
  const files = new Map<string, FileState>();
  const fileNames: string[] = [];
  for (let m = 0; m < 14; m++) {
    for (let f = 0; f < 6; f++) fileNames.push(`src/${WORDS[(m * 3) % WORDS.length]}/${WORDS[(m * 7 + f * 5) % WORDS.length]}-${f}.ts`);
  }
  for (const name of fileNames) files.set(name, { version: 1, size: Math.round((800 + (hashString(name) % 4200)) * scale) });
  const recentlyRead: string[] = [];

  const fileContent = (path: string): string => {
    const state = files.get(path)!;
    const fileRng = new Rng(hashString(`${path}#${state.version}`));
    return linesOf(fileRng, state.size, codeLine);
  };

  const thinking = () => (withThinking ? prose(rng, rng.int(20, 200)) : undefined);

  const makeCall = (kind: string): ScriptCall => {
    switch (kind) {
      case "read": {
        const path = rng.pick(fileNames);
        recentlyRead.push(path);
        if (recentlyRead.length > 12) recentlyRead.shift();
        return { name: "read", args: { path }, result: fileContent(path), isError: false, kind };
      }
      case "reread": {
        const path = recentlyRead.length ? rng.pick(recentlyRead) : rng.pick(fileNames);
        return { name: "read", args: { path }, result: fileContent(path), isError: false, kind: "reread" };
      }
      case "skill":
        return { name: "read", args: { path: SKILL_PATH }, result: skillText(), isError: false, kind };
      case "grep": {
        const word = rng.pick(WORDS);
        const chars = Math.round(rng.int(300, 2500) * scale);
        const result = linesOf(rng, chars, (r) => `${r.pick(fileNames)}:${r.int(1, 400)}:${codeLine(r).replace(/^\s+/, "  ")}`);
        return { name: "grep", args: { pattern: word, path: "src" }, result, isError: false, kind };
      }
      case "build": {
        const huge = rng.chance(hugeLogChance);
        const chars = huge ? rng.int(70_000, 120_000) : Math.round(rng.int(600, 4000) * scale);
        const result = linesOf(rng, chars, (r, i) =>
          i % 9 === 0 ? `▲ [WARNING] ${prose(r, r.int(4, 10))} [${r.pick(fileNames)}:${r.int(1, 300)}]` : `  ${r.pick(fileNames).replace(/\.ts$/, ".js")}  ${r.int(1, 90)}.${r.int(0, 9)}kb`,
        );
        return { name: "bash", args: { command: "npm run build 2>&1" }, result, isError: false, kind: huge ? "spill" : "build" };
      }
      case "test": {
        const failing = rng.chance(0.2);
        const chars = Math.round(rng.int(500, 3000) * scale);
        let result = linesOf(rng, chars, (r) => ` ${r.chance(0.95) ? "✓" : "×"} test/${r.pick(WORDS)}.test.ts (${r.int(1, 40)} tests) ${r.int(2, 900)}ms`);
        if (failing) result += `\n\nFAIL test/${rng.pick(WORDS)}.test.ts > ${prose(rng, 6)}\nAssertionError: expected ${rng.int(0, 99)} to be ${rng.int(100, 999)}\n${linesOf(rng, 600, (r) => `    at ${ident(r)} (${r.pick(fileNames)}:${r.int(1, 300)}:${r.int(1, 60)})`)}`;
        return { name: "bash", args: { command: "npx vitest run 2>&1" }, result, isError: failing, kind: "test" };
      }
      case "edit": {
        const path = rng.pick(fileNames);
        const fails = rng.chance(0.12);
        const oldText = linesOf(rng, rng.int(60, 900), codeLine);
        const newText = linesOf(rng, rng.int(60, 1100), codeLine);
        if (!fails) {
          const state = files.get(path)!;
          state.version++;
          state.size = Math.max(600, state.size + newText.length - oldText.length);
        }
        const result = fails
          ? `Could not find edits[0] in ${path}. The oldText must match exactly including all whitespace and newlines.`
          : `Successfully replaced 1 block(s) in ${path}.`;
        return { name: "edit", args: { path, edits: [{ oldText, newText }] }, result, isError: fails, kind: fails ? "error" : "edit" };
      }
      case "write": {
        const path = `src/${rng.pick(WORDS)}/${rng.pick(WORDS)}-new.ts`;
        const content = linesOf(rng, Math.round(rng.int(600, 3500) * scale), codeLine);
        return { name: "write", args: { path, content }, result: `Successfully wrote ${content.length} bytes to ${path}`, isError: false, kind };
      }
      default: {
        const result = linesOf(rng, rng.int(200, 900), (r) => r.pick(fileNames).split("/").pop()!);
        return { name: "bash", args: { command: `ls -la src/${rng.pick(WORDS)}` }, result, isError: false, kind: "ls" };
      }
    }
  };

  for (let task = 0; ; task++) {
    yield { kind: "user", text: task < TASKS.length ? TASKS[task]! : `${rng.pick(TASKS)} (follow-up ${task})` };
    const turns = rng.int(minTurns, maxTurns);
    const readsSkill = task === 0 || (task % TASKS.length) === 4;
    for (let t = 0; t < turns; t++) {
      const p = t / turns;
      const weights =
        p < 0.4
          ? { read: 45, grep: 22, ls: 8, reread: 8, build: 7, test: 5, edit: 5, write: 0 }
          : p < 0.85
            ? { read: 18, grep: 8, ls: 2, reread: 8, build: 14, test: 12, edit: 30, write: 8 }
            : { read: 8, grep: 4, ls: 0, reread: 6, build: 30, test: 40, edit: 12, write: 0 };
      const count = rng.chance(0.28) ? rng.int(2, 3) : 1;
      const calls: ScriptCall[] = [];
      if (readsSkill && t === 1) calls.push(makeCall("skill"));
      while (calls.length < count) calls.push(makeCall(rng.weighted(weights)));
      yield {
        kind: "assistant",
        thinking: thinking(),
        thinkingSignature: withThinking ? signature(rng) : undefined,
        text: rng.chance(0.35) ? prose(rng, rng.int(6, 30)) : undefined,
        calls,
      };
    }
    yield { kind: "assistant", thinking: thinking(), thinkingSignature: withThinking ? signature(rng) : undefined, text: prose(rng, rng.int(40, 160)), calls: [] };
  }
}

/** A source file of about `chars` characters, the same for the same path and seed. */
export function sourceFile(path: string, chars: number, seed = 1): string {
  return linesOf(new Rng(hashString(`${path}#${seed}`)), chars, codeLine) + "\n";
}

export function skillText(): string {
  const rng = new Rng(7);
  const steps = Array.from({ length: 24 }, (_, i) => `${i + 1}. ${prose(rng, rng.int(8, 22))}.`).join("\n");
  return `---\nname: release\ndescription: How to cut a release of this project.\n---\n\n# Release\n\nNever skip a gate.\n\n${steps}\n`;
}

/** The first `turns` assistant turns of a script (with the user prompts among them). */
export function takeTurns(script: Iterable<ScriptStep>, turns: number): ScriptStep[] {
  const out: ScriptStep[] = [];
  let assistants = 0;
  for (const step of script) {
    out.push(step);
    if (step.kind === "assistant" && ++assistants >= turns) break;
  }
  return out;
}

/**
 * A recorded session as a script: its user prompts, and each assistant message with the tool
 * results that answer it (ids, arguments and outputs as recorded). Only the default branch.
 */
export function scriptFromMessages(messages: readonly { role: string; [k: string]: unknown }[]): ScriptStep[] {
  const steps: ScriptStep[] = [];
  let current: Extract<ScriptStep, { kind: "assistant" }> | undefined;
  for (const m of messages) {
    if (m.role === "user") {
      const content = m.content as string | { type: string; text?: string }[];
      const text = typeof content === "string" ? content : content.map((b) => b.text ?? "").join("\n");
      steps.push({ kind: "user", text });
      current = undefined;
    } else if (m.role === "assistant") {
      const blocks = (m.content ?? []) as { type: string; thinking?: string; thinkingSignature?: string; text?: string; id?: string; name?: string; arguments?: Record<string, unknown> }[];
      const thinking = blocks.filter((b) => b.type === "thinking");
      const texts = blocks.filter((b) => b.type === "text");
      current = {
        kind: "assistant",
        thinking: thinking.length ? thinking.map((b) => b.thinking ?? "").join("\n") : undefined,
        thinkingSignature: thinking.length ? thinking.map((b) => b.thinkingSignature ?? "").join("") : undefined,
        text: texts.length ? texts.map((b) => b.text ?? "").join("\n") : undefined,
        calls: blocks
          .filter((b) => b.type === "toolCall")
          .map((b) => ({ id: b.id, name: b.name ?? "", args: b.arguments ?? {}, result: "", isError: false, kind: b.name ?? "" })),
      };
      steps.push(current);
    } else if (m.role === "toolResult" && current) {
      const call = current.calls.find((c) => c.id === m.toolCallId && c.result === "");
      const content = m.content as { type: string; text?: string }[];
      if (call) {
        call.result = content.map((b) => (b.type === "text" ? b.text ?? "" : "")).join("\n");
        call.isError = m.isError === true;
      }
    }
  }
  return steps;
}
