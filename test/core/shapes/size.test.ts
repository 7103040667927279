import { describe, expect, it } from "vitest";
import { formatNumber } from "../../../core/src/shapes/size.ts";

describe("formatNumber", () => {
  it("groups digits exactly as toLocaleString('en-US') does, for every kind of number", () => {
    const samples = [0, 7, 999, 1000, 1001, 12_345, 999_999, 1_000_000, 1_234_567, -1, -1000, -1_234_567, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 0.5, 1234.5678, -9876.54321, 1e21, Number.NaN, Infinity];
    for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.random() * 10 ** (1 + (i % 15))));
    for (const n of samples) expect(formatNumber(n)).toBe(n.toLocaleString("en-US"));
  });
});
