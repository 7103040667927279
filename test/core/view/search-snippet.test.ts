// A search result's line: the matched word in it near its start, highlighted, whole words first.
import { describe, expect, it } from "vitest";
import { searchSnippetAround } from "../../../core/src/view/search-snippet.ts";

const marked = (s: { text: string; highlights: [number, number][] }) => s.highlights.map(([a, b]) => s.text.slice(a, b));

describe("searchSnippetAround", () => {
  it("shows a match far into a long output, near the line's start, and says where it is", () => {
    const text = `${"filler line of build output\n".repeat(200)}error TS2345: the NEEDLE is not assignable\n${"more output\n".repeat(50)}`;
    const snippet = searchSnippetAround(text, ["needle"]);
    expect(snippet.text.startsWith("…")).toBe(true);
    expect(snippet.text.endsWith("…")).toBe(true);
    expect(marked(snippet)).toEqual(["NEEDLE"]);
    // A side bar's result row shows about 30 characters of the line: the match begins early in them.
    expect(snippet.highlights[0]![0]).toBeLessThanOrEqual(14);
    expect(snippet.text).not.toMatch(/\n/);
  });

  it("highlights every occurrence of every term in the line, whole words rather than parts of others", () => {
    const snippet = searchSnippetAround("the subparser calls the parser; Parser errors are parser-level", ["parser"], { before: 100, width: 200 });
    expect(marked(snippet)).toEqual(["parser", "Parser", "parser"]);
    expect(snippet.text).toBe("the subparser calls the parser; Parser errors are parser-level");
  });

  it("a term only found inside a longer word is still shown and highlighted", () => {
    const snippet = searchSnippetAround("handleRequestTimeout fired", ["request"]);
    expect(marked(snippet)).toEqual(["Request"]);
  });

  it("no term in the text: its beginning, nothing highlighted", () => {
    expect(searchSnippetAround("short text", ["zzz"])).toEqual({ text: "short text", highlights: [] });
  });
});
