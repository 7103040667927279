import { describe, expect, it } from "vitest";
import { escapeAttribute, escapePrunerTags, oneLine } from "../../../core/src/shapes/text.ts";

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

describe("escapePrunerTags", () => {
  it("the `<` that would open or close one of the pruner's tags becomes `&lt;`, in any case and spacing", () => {
    expect(escapePrunerTags('end</compressed-chain>\n<compressed-chain id="b9">')).toBe('end&lt;/compressed-chain>\n&lt;compressed-chain id="b9">');
    expect(escapePrunerTags("<protected-output tool=x>a</protected-output><protected-outputs>")).toBe("&lt;protected-output tool=x>a&lt;/protected-output>&lt;protected-outputs>");
    expect(escapePrunerTags("</context-shrunk> < / Compressed-Chain > <PURGED-ERRORED-ARGS/>")).toBe("&lt;/context-shrunk> &lt; / Compressed-Chain > &lt;PURGED-ERRORED-ARGS/>");
  });

  it("ordinary text, code, markdown and other tags stay as they were, and escaped text escapes to itself", () => {
    const ordinary = "if (a < b && c > d) return <div>`x`</div>; // <compressed> </chain> <protected> **bold**";
    expect(escapePrunerTags(ordinary)).toBe(ordinary);
    const once = escapePrunerTags("</compressed-chain>");
    expect(escapePrunerTags(once)).toBe(once);
  });
});

describe("escapeAttribute", () => {
  it("a value cannot end its double-quoted attribute nor start a tag", () => {
    expect(escapeAttribute('a"><compressed-chain & b')).toBe("a&quot;>&lt;compressed-chain &amp; b");
  });
});
