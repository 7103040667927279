import { describe, expect, it } from "vitest";
import { oneLine } from "../../../core/src/shapes/text.ts";

describe("oneLine", () => {
  it("collapses every run of whitespace to one space and trims the ends", () => {
    expect(oneLine("  read\n\tthe   file \r\n", 80)).toBe("read the file");
  });

  it("cuts a longer line to max characters, the last one an ellipsis", () => {
    expect(oneLine("abcdefghij", 10)).toBe("abcdefghij");
    expect(oneLine("abcdefghijk", 10)).toBe("abcdefghi…");
    expect(oneLine("abcdefghijk", 10)).toHaveLength(10);
  });

  it("leaves everything else as it is (making text safe to show is the caller's part)", () => {
    expect(oneLine("\u001b[31mred\u001b[0m", 80)).toBe("\u001b[31mred\u001b[0m");
  });
});
