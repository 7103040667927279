// What a session yields to the search index, and where each hit leads.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { getBranch, parseSessionText } from "../../../core/src/session/session-reader.ts";
import { sessionSearchParts } from "../../../core/src/view/session-search.ts";

function session() {
  const b = new SessionBuilder()
    .user("find the flaky parser test")
    .assistant({ text: "reading it", toolCalls: [{ id: "c1", name: "read", args: { path: "src/parser.ts", limit: 40 } }] })
    .toolResult("c1", "read", "export function parseWidget() {}")
    .assistant("the parser drops trailing commas");
  return parseSessionText(b.toJsonl());
}

describe("sessionSearchParts", () => {
  it("a prompt, a reply, a call's arguments and its output are each one part, in file order", () => {
    const data = session();
    const parts = sessionSearchParts(data.entries);
    expect(parts.map((p) => [p.kind, p.text])).toEqual([
      ["prompt", "find the flaky parser test"],
      ["reply", "reading it"],
      ["arguments", "src/parser.ts\n40"],
      ["output", "export function parseWidget() {}"],
      ["reply", "the parser drops trailing commas"],
    ]);
  });

  it("a call's arguments and output both lead to the call's document, keyed by the result's timestamp", () => {
    const data = session();
    const parts = sessionSearchParts(data.entries);
    const result = data.entries.find((e) => e.type === "message" && (e as { message: { role: string } }).message.role === "toolResult") as unknown as { message: { timestamp: number } };
    const key = `c1@${result.message.timestamp}`;
    expect(parts.filter((p) => p.kind === "arguments" || p.kind === "output").map((p) => [p.toolName, p.callKey])).toEqual([
      ["read", key],
      ["read", key],
    ]);
  });

  it("each message leads to the model view of the first request that sent it; the last reply to the next request", () => {
    const data = session();
    const branch = getBranch(data, data.entries.at(-1)!.id).entries;
    const parts = sessionSearchParts(data.entries, { branch });
    expect(parts.map((p) => [p.kind, p.request])).toEqual([
      ["prompt", 1],
      ["reply", 2],
      ["arguments", 2],
      ["output", 2],
      ["reply", "next"],
    ]);
  });

  it("a message off the branch has no request; without a branch none has", () => {
    const b = new SessionBuilder().user("first").assistant("one").branchFrom("e1").assistant("other answer");
    const data = parseSessionText(b.toJsonl());
    const branch = getBranch(data, "e3").entries;
    expect(sessionSearchParts(data.entries, { branch }).map((p) => [p.text, p.request])).toEqual([
      ["first", 1],
      ["one", undefined],
      ["other answer", "next"],
    ]);
    expect(sessionSearchParts(data.entries).every((p) => p.request === undefined)).toBe(true);
  });

  it("a huge output is indexed only up to the limit; empty text yields no part", () => {
    const b = new SessionBuilder().user("go").toolUse("bash", { command: "cat big" }, "x".repeat(5000)).toolUse("bash", { command: "true" }, "   ");
    const parts = sessionSearchParts(parseSessionText(b.toJsonl()).entries, { maxChars: 100 });
    const outputs = parts.filter((p) => p.kind === "output");
    expect(outputs.map((p) => p.text.length)).toEqual([100]);
  });
});

describe("sessionSearchParts, a batch at a time", () => {
  it("a call's arguments in one batch lead to the document its result in a later batch names", () => {
    const data = session();
    const parts = sessionSearchParts(data.entries.slice(0, 2), { keysFrom: data.entries });
    const output = sessionSearchParts(data.entries).find((p) => p.kind === "output")!;
    expect(parts.find((p) => p.kind === "arguments")!.callKey).toBe(output.callKey);
  });
});
