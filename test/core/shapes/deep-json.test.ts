// Values from a session nest deeper than the engine's own recursion goes: what measures or hashes
// them gets JSON.stringify's text at any depth; what shows them cuts them.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { jsonText, nestsDeeperThan, shownValue, SHOWN_DEPTH, TOO_DEEP_TO_SHOW } from "../../../core/src/shapes/deep-json.ts";

/** `inner` inside `depth` arrays, built without recursion (as JSON.parse builds it). */
function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("jsonText", () => {
  it("writes a value nested a million levels deep, where JSON.stringify throws", () => {
    const deep = nested(1_000_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(jsonText(deep)).toBe(`${"[".repeat(1_000_000)}1${"]".repeat(1_000_000)}`);
  });

  it("below the engine's depth, any JSON value, toJSON, omitted members and a replacer give JSON.stringify's own text", () => {
    const replacer = (key: string, value: unknown) => (key === "cache_control" ? undefined : key === "content" && typeof value === "string" ? [{ type: "text", text: value }] : value);
    const odd = { a: undefined, b: () => 1, c: [undefined, Symbol("s"), Number.NaN, -0, Infinity], d: new Date(0), cache_control: { type: "ephemeral" }, content: "hi" };
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.constant(odd)), fc.boolean(), (inner, withReplacer) => {
        // Wrapped 6,000 deep, the engine's own writer throws and the loop writes it all.
        const deep = nested(6_000, inner);
        const r = withReplacer ? replacer : undefined;
        expect(jsonText(deep, r)).toBe(`${"[".repeat(6_000)}${JSON.stringify(inner, r) ?? "null"}${"]".repeat(6_000)}`);
      }),
      { numRuns: 200 },
    );
  });

  it("a circular value is still refused, as JSON.stringify refuses it", () => {
    const loop: unknown[] = [];
    loop.push(loop);
    expect(() => jsonText(nested(6_000, loop))).toThrow(TypeError);
  });
});

describe("shownValue", () => {
  it("keeps a value as deep as SHOWN_DEPTH as it is, and cuts a deeper one there", () => {
    const shallow = nested(SHOWN_DEPTH);
    expect(shownValue(shallow)).toBe(shallow);
    expect(nestsDeeperThan(shallow, SHOWN_DEPTH)).toBe(false);
    const cut = shownValue({ path: "a.ts", deep: nested(1_000_000) });
    expect(JSON.stringify(cut)).toBe(`{"path":"a.ts","deep":${"[".repeat(SHOWN_DEPTH - 1)}${JSON.stringify(TOO_DEEP_TO_SHOW)}${"]".repeat(SHOWN_DEPTH - 1)}}`);
  });
});
