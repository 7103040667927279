// Refs written for another branch: each ref and block id of the branch left stands as
// `<leafId>/tN` in what a branch summarizer reads, and nothing else in the text changes.
import { describe, expect, it } from "vitest";
import { branchRef, branchRefsOf, canNameBranch, mentionsRef, parseBranchRef, renameBranchRefs } from "../../../core/src/prune/branch-refs.ts";
import { addIndexedCall, emptyIndex, recordKey } from "../../../core/src/prune/prune-index.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

const REFS = new Set(["t3", "t4", "b2"]);
const named = (ref: string) => branchRef("7b0b50f1", ref);

describe("renameBranchRefs", () => {
  it("names each of the branch's refs and block ids by the branch, in summaries, chains, stubs and the refs a query asked for", () => {
    const messages: AgentMessage[] = [
      { role: "custom", customType: "context-prune-summary", content: "- `t3` read src/a1.ts\n- `t4` read src/a2.ts\n\nPruned refs: `t3`, `t4`.", display: false, timestamp: 1 },
      { role: "user", content: [{ type: "text", text: '<compressed-chain id="b2" tools="t3 t4">done</compressed-chain>' }], timestamp: 2 },
      { role: "assistant", content: [{ type: "text", text: "I will look at t3 again." }, { type: "toolCall", id: "c1", name: "context_tree_query", arguments: { toolCallIds: ["t3", "call_raw"] } }], timestamp: 3 },
      { role: "branchSummary", summary: "Read src/a1.ts (`t4`)", fromId: "x", timestamp: 4 },
    ];
    const out = renameBranchRefs(messages, REFS, named);
    expect(out).not.toBe(messages);
    expect((out[0] as { content: string }).content).toBe("- `7b0b50f1/t3` read src/a1.ts\n- `7b0b50f1/t4` read src/a2.ts\n\nPruned refs: `7b0b50f1/t3`, `7b0b50f1/t4`.");
    expect(JSON.stringify(out[1])).toContain('id=\\"7b0b50f1/b2\\" tools=\\"7b0b50f1/t3 7b0b50f1/t4\\"');
    const assistant = out[2] as Extract<AgentMessage, { role: "assistant" }>;
    expect(assistant.content[0]).toEqual({ type: "text", text: "I will look at 7b0b50f1/t3 again." });
    expect(assistant.content[1]).toEqual({ type: "toolCall", id: "c1", name: "context_tree_query", arguments: { toolCallIds: ["7b0b50f1/t3", "call_raw"] } });
    expect((out[3] as { summary: string }).summary).toBe("Read src/a1.ts (`7b0b50f1/t4`)");
    // The input is left as it was.
    expect((messages[0] as { content: string }).content).toContain("- `t3` read");
  });

  it("leaves words, paths, other branches' refs, refs the branch does not have and other tools' arguments alone: the same array back", () => {
    const messages: AgentMessage[] = [
      { role: "user", content: "see src/t3/util.ts, t3x, at3, t3-old, 1a2b3c4d/t3, and `t9`", timestamp: 1 },
      { role: "assistant", content: [{ type: "toolCall", id: "c2", name: "bash", arguments: { command: "echo t3" } }], timestamp: 2 },
    ];
    expect(renameBranchRefs(messages, REFS, named)).toBe(messages);
    expect(renameBranchRefs(messages, new Set(), named)).toBe(messages);
  });
});

describe("branch refs", () => {
  it("a branch ref names an entry id of plain characters and a short ref; anything else is no branch ref", () => {
    expect(parseBranchRef("7b0b50f1/t3")).toEqual({ branchId: "7b0b50f1", ref: "t3" });
    for (const text of ["t3", "../x/t3", "7b0b50f1/b2", "7b0b50f1/t3/t4", "/t3", `${"a".repeat(65)}/t3`, "a b/t3", "7b0b50f1/t"]) expect(parseBranchRef(text), text).toBeUndefined();
    expect(canNameBranch("7b0b50f1")).toBe(true);
    expect(canNameBranch("a/b")).toBe(false);
  });

  it("a text mentions a ref only where it stands alone", () => {
    expect(mentionsRef("Read src/a1.ts (`t3`)", "t3")).toBe(true);
    expect(mentionsRef("Read src/a1.ts (`7b0b50f1/t3`), t30, src/t3.ts", "t3")).toBe(false);
  });

  it("the refs of a branch are its short refs and block ids, not the raw ids that stand in for a missing ref", () => {
    const index = emptyIndex();
    const record = { toolCallId: "call_1", toolName: "read", args: {}, resultText: "x", isError: false, turnIndex: 0, timestamp: 1 };
    addIndexedCall(index, { record, key: recordKey(record), shortRef: "t1" });
    const raw = { ...record, toolCallId: "call_2", timestamp: 2 };
    addIndexedCall(index, { record: raw, key: recordKey(raw), shortRef: "call_2" });
    index.chains.push({ blockId: "b1" } as (typeof index.chains)[number]);
    expect([...branchRefsOf(index)].sort()).toEqual(["b1", "t1"]);
  });
});
