// Step 2 of the render: the long strings of a failed call's large arguments are cut short after a
// cool-down; the arguments keep their shape.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { freshIndex, piContext } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import { PURGE_STRING_BOUND } from "../../../core/src/render/error-purge.ts";
import type { AgentMessage, AssistantMessage, ToolCallBlock } from "../../../core/src/shapes/messages.ts";

// Each step's own turn counting, as the turns pass (cacheAware off); epochs.test.ts counts them by flushes.
const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"], cacheAware: false };

/** A failed call of `tool` with `args`, followed by the two turns of the cooldown. */
function failedCall(tool: string, args: Record<string, unknown>): SessionBuilder {
  return new SessionBuilder().user("do it").toolUse(tool, args, "Error: EACCES", { isError: true }).assistant("retrying").user("go on").assistant("ok");
}

function callArgs(messages: readonly AgentMessage[]): Record<string, unknown> {
  return ((messages[1] as AssistantMessage).content[0] as ToolCallBlock).arguments;
}

/** What a cut string says of itself: the start it kept, and how many characters it cut. */
function cutOf(text: string): { head: string; cut: number } | undefined {
  const m = /^([\s\S]*)…<purged-errored-args cut="(\d+)"\/>$/.exec(text);
  return m ? { head: m[1]!, cut: Number(m[2]) } : undefined;
}

describe("error purge", () => {
  const body = "y".repeat(800);

  it("a failed call's long string argument keeps its start and says how much was cut; short ones and the error result stay", () => {
    const b = failedCall("write", { path: "a.ts", content: body });
    const out = renderModelView(piContext(b), freshIndex(b), config);
    const args = callArgs(out.messages);
    expect(Object.keys(args)).toEqual(["path", "content"]);
    expect(args.path).toBe("a.ts");
    const cut = cutOf(args.content as string);
    expect(cut).toBeDefined();
    expect(body.startsWith(cut!.head)).toBe(true);
    expect(cut!.head.length + cut!.cut).toBe(body.length);
    expect(out.stats.purgedArgs).toBe(1);
    expect(out.messages[2]).toMatchObject({ role: "toolResult", isError: true, content: [{ type: "text", text: "Error: EACCES" }] });
    // Purged arguments are purged already: rendering what was sent changes nothing more and counts no purge.
    const twice = renderModelView(out.messages, freshIndex(b), config);
    expect(JSON.stringify(twice.messages)).toBe(JSON.stringify(out.messages));
    expect(twice.stats.purgedArgs).toBe(0);
  });

  it("the purge keeps most of the savings: over 70% of a call just at minArgChars, over 97% of a 5,000-character write", () => {
    const purgedShare = (content: string) => {
      const b = failedCall("write", { path: "src/feature/a.ts", content });
      const purged = callArgs(renderModelView(piContext(b), freshIndex(b), config).messages);
      expect(purged.path).toBe("src/feature/a.ts");
      return JSON.stringify(purged).length / JSON.stringify(callArgs(piContext(b))).length;
    };
    expect(purgedShare("z".repeat(DEFAULT_CONFIG.purgeErrors.minArgChars))).toBeLessThan(0.3);
    expect(purgedShare("z".repeat(5_000))).toBeLessThan(0.03);
  });

  it("a grammar tool's input stays a string: a failed codemode script is cut inside its `code`", () => {
    const code = `throw new Error("boom");\n${"// padding\n".repeat(70)}`;
    const b = failedCall("codemode", { code });
    const args = callArgs(renderModelView(piContext(b), freshIndex(b), config).messages);
    expect(Object.keys(args)).toEqual(["code"]);
    expect(typeof args.code).toBe("string");
    expect((args.code as string).startsWith('throw new Error("boom");')).toBe(true);
    expect(cutOf(args.code as string)!.cut).toBe(code.length - cutOf(args.code as string)!.head.length);
  });

  it("nested arguments keep their keys, value types and array lengths; only long strings change, wherever they are", () => {
    const long = (c: string) => c.repeat(300);
    const args = {
      path: "a.ts",
      edits: [
        { oldText: long("o"), newText: "short", line: 3 },
        { oldText: "x", newText: long("n"), replaceAll: true },
      ],
      options: { dryRun: false, note: null, tags: ["a", long("t"), 7] },
      count: 2,
    };
    const b = failedCall("edit", args);
    const out = callArgs(renderModelView(piContext(b), freshIndex(b), config).messages) as typeof args;
    const shape = (v: unknown): unknown => (Array.isArray(v) ? v.map(shape) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)])) : v === null ? "null" : typeof v);
    expect(shape(out)).toEqual(shape(args));
    expect(out.edits[0]!.newText).toBe("short");
    expect(out.edits[1]!.oldText).toBe("x");
    expect(out.options.tags[0]).toBe("a");
    for (const s of [out.edits[0]!.oldText, out.edits[1]!.newText, out.options.tags[1] as string]) {
      expect(s.length).toBeLessThanOrEqual(PURGE_STRING_BOUND);
      expect(cutOf(s)!.head.length + cutOf(s)!.cut).toBe(300);
    }
  });

  it("a cut never splits a surrogate pair, and is byte-stable: every request renders the same bytes from a fresh copy", () => {
    // One character before the pairs puts a pair across the end of the kept start.
    const b = failedCall("write", { path: "a.ts", content: `x${"😀".repeat(400)}` });
    const out = renderModelView(piContext(b), freshIndex(b), config).messages;
    const content = callArgs(out).content as string;
    expect(content).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    expect(cutOf(content)!.head).toBe(`x${"😀".repeat((cutOf(content)!.head.length - 1) / 2)}`);
    expect(JSON.stringify(renderModelView(structuredClone(piContext(b)), freshIndex(b), config).messages)).toBe(JSON.stringify(out));
  });

  it("session data cannot steer the walk: a `__proto__` key stays an own key, and a deep nesting is walked to a bound, without recursion", () => {
    const hostile = JSON.parse(`{"__proto__": {"polluted": "${"p".repeat(600)}"}, "path": "a.ts"}`) as Record<string, unknown>;
    const b = failedCall("write", hostile);
    const args = callArgs(renderModelView(piContext(b), freshIndex(b), config).messages);
    expect(Object.keys(args)).toEqual(["__proto__", "path"]);
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(cutOf((Object.getOwnPropertyDescriptor(args, "__proto__")!.value as { polluted: string }).polluted)).toBeDefined();

    let deep: unknown = "d".repeat(300);
    for (let i = 0; i < 200; i++) deep = [deep];
    const nested = failedCall("write", { near: "n".repeat(300), deep });
    const out = callArgs(renderModelView(piContext(nested), freshIndex(nested), config).messages);
    expect(cutOf(out.near as string)).toBeDefined();
    let inner: unknown = out.deep;
    for (let i = 0; i < 200; i++) inner = (inner as unknown[])[0];
    expect(inner).toBe("d".repeat(300)); // beyond the bound, kept as it was
  });

  it("within the cooldown, below minArgChars, for a call that succeeded, or with no long string, arguments stay", () => {
    const recent = new SessionBuilder().user("w").toolUse("write", { path: "a.ts", content: body }, "Error", { isError: true }).assistant("retrying");
    const input = piContext(recent);
    expect(renderModelView(input, freshIndex(recent), config).messages).toBe(input);
    const small = new SessionBuilder().user("w").toolUse("write", { path: "a.ts" }, "Error", { isError: true }).assistant("a").assistant("b");
    const smallInput = piContext(small);
    expect(renderModelView(smallInput, freshIndex(small), config).messages).toBe(smallInput);
    const ok = new SessionBuilder().user("w").toolUse("write", { path: "a.ts", content: body }, "written").assistant("a").assistant("b");
    const okInput = piContext(ok);
    expect(renderModelView(okInput, freshIndex(ok), config).messages).toBe(okInput);
    const manyShort = failedCall("bash", { commands: Array.from({ length: 40 }, (_, i) => `echo step ${i}`) });
    const manyInput = piContext(manyShort);
    const out = renderModelView(manyInput, freshIndex(manyShort), config);
    expect(JSON.stringify(callArgs(manyInput)).length).toBeGreaterThan(DEFAULT_CONFIG.purgeErrors.minArgChars);
    expect(out.messages).toBe(manyInput);
    expect(out.stats.purgedArgs).toBe(0);
  });
});
