// Values from a session nest deeper than the engine's own recursion goes: what measures or hashes
// them and what shows them cuts them where they nest deeper than SHOWN_DEPTH, instead of throwing.
import { describe, expect, it } from "vitest";
import { jsonText, nestsDeeperThan, shownValue, SHOWN_DEPTH, TOO_DEEP_TO_SHOW } from "../../../core/src/shapes/deep-json.ts";

/** `inner` inside `depth` arrays, built without recursion (as JSON.parse builds it). */
function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** The text of `{path, deep}` once `deep` is cut: the object is level 1, so 99 arrays are kept. */
const CUT = `{"path":"a.ts","deep":${"[".repeat(SHOWN_DEPTH - 1)}${JSON.stringify(TOO_DEEP_TO_SHOW)}${"]".repeat(SHOWN_DEPTH - 1)}}`;

describe("jsonText", () => {
  it("writes a value the engine can write as JSON.stringify does, deep or not", () => {
    const value = { path: "a.ts", deep: nested(2_000) };
    expect(jsonText(value)).toBe(JSON.stringify(value));
    const replacer = (key: string, v: unknown) => (key === "cache_control" ? undefined : v);
    expect(jsonText({ a: 1, cache_control: {} }, replacer)).toBe('{"a":1}');
  });

  it("writes a value nested a million levels deep, where JSON.stringify throws, as its cut copy", () => {
    const value = { path: "a.ts", deep: nested(1_000_000) };
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    expect(jsonText(value)).toBe(CUT);
    const replacer = (key: string, v: unknown) => (key === "path" ? undefined : v);
    expect(jsonText(value, replacer)).toBe(CUT.replace('"path":"a.ts",', ""));
  });
});

describe("shownValue", () => {
  it("keeps a value as deep as SHOWN_DEPTH as it is, and cuts a deeper one there", () => {
    const shallow = nested(SHOWN_DEPTH);
    expect(shownValue(shallow)).toBe(shallow);
    expect(nestsDeeperThan(shallow, SHOWN_DEPTH)).toBe(false);
    expect(nestsDeeperThan(nested(SHOWN_DEPTH + 1), SHOWN_DEPTH)).toBe(true);
    expect(JSON.stringify(shownValue({ path: "a.ts", deep: nested(1_000_000) }))).toBe(CUT);
  });
});
