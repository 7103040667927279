// buildPiContext must give what Pi 1.6 sends for a branch, minus system messages. Pi's own
// buildSessionProjection is the oracle: it also names the entry each message comes from.
import { buildSessionProjection, type SessionEntry as PiSessionEntry } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildPiContext, type ContextMessage } from "../../../core/src/session/pi-context.ts";
import { getBranch, parseSessionText, type SessionData } from "../../../core/src/session/session-reader.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";

function piContext(data: SessionData, leafId: string): ContextMessage[] {
  const projection = buildSessionProjection(data.entries as unknown as PiSessionEntry[], leafId);
  return projection.entries.flatMap((projected) =>
    projected.messages
      .filter((message) => message.role !== "system")
      .map((message) => ({ message: message as ContextMessage["message"], entryId: projected.sourceEntry.id })),
  );
}

function ourContext(data: SessionData, leafId: string): ContextMessage[] {
  return buildPiContext(getBranch(data, leafId).entries);
}

/** Compares at every entry as leaf, so every prefix of every branch is checked. */
function expectSameAsPiAtEveryLeaf(session: SessionBuilder): void {
  const data = parseSessionText(session.toJsonl());
  expect(data.errors).toEqual([]);
  for (const entry of data.entries) {
    expect(ourContext(data, entry.id), `leaf ${entry.id}`).toStrictEqual(piContext(data, entry.id));
  }
}

function roles(context: ContextMessage[]): string[] {
  return context.map(({ message }) => message.role);
}

function plainSession(): SessionBuilder {
  return new SessionBuilder()
    .system("You are a coding assistant.", { sections: { preamble: "You are…" } })
    .user("What is in src?")
    .assistant({ thinking: "list it", text: "Looking.", toolCalls: [{ id: "c1", name: "ls", args: { path: "src" } }, { id: "c2", name: "read", args: { path: "src/a.ts" } }] })
    .toolResult("c1", "ls", "a.ts b.ts")
    .toolResult("c2", "read", "export const a = 1;")
    .assistant("src holds a.ts and b.ts.")
    .user([{ type: "text", text: "Run the tests" }])
    .toolUse("bash", { command: "npm test" }, "1 failing", { isError: true })
    .assistant("One test fails.");
}

describe("buildPiContext against Pi's buildSessionContext", () => {
  it("a plain session: every message but the system prompt, in order, with its entry id", () => {
    const session = plainSession();
    expectSameAsPiAtEveryLeaf(session);
    const context = ourContext(parseSessionText(session.toJsonl()), session.lastId);
    expect(roles(context)).toEqual(["user", "assistant", "toolResult", "toolResult", "assistant", "user", "assistant", "toolResult", "assistant"]);
    expect(context[0].entryId).toBe("e2");
  });

  it("an older session without a persisted system prompt, with a shell execution and model changes", () => {
    const session = new SessionBuilder()
      .modelChange("mock", "m")
      .user("hi")
      .raw({ type: "message", message: { role: "bashExecution", command: "ls", output: "a", exitCode: 0, cancelled: false, truncated: false, timestamp: 5 } })
      .raw({ type: "thinking_level_change", thinkingLevel: "high" })
      .assistant("hello");
    expectSameAsPiAtEveryLeaf(session);
  });

  it("a compaction: its summary, then the kept entries without system messages, then everything after", () => {
    const session = new SessionBuilder()
      .system("prompt v1") // e1
      .user("first question") // e2
      .assistant("first answer") // e3
      .user("second question") // e4
      .system("prompt v2") // e5: inside the kept range, dropped
      .toolUse("read", { path: "a" }, "aaa") // e6, e7
      .compaction({ firstKeptEntryId: "e4", summary: "Asked two questions.", tokensBefore: 5000, systemMessage: { role: "system", content: "checkpoint", timestamp: 1 } }) // e8
      .user("third question") // e9
      .system("prompt v3") // e10: after the compaction
      .assistant("third answer"); // e11
    expectSameAsPiAtEveryLeaf(session);

    const context = ourContext(parseSessionText(session.toJsonl()), "e11");
    expect(context.map((c) => c.entryId)).toEqual(["e8", "e4", "e6", "e7", "e9", "e11"]);
    expect(context[0].message).toMatchObject({ role: "compactionSummary", summary: "Asked two questions.", tokensBefore: 5000 });
  });

  it("several compactions: only the newest counts; an older one inside its kept range adds nothing", () => {
    const session = new SessionBuilder()
      .user("q1") // e1
      .assistant("a1") // e2
      .user("q2") // e3
      .assistant("a2") // e4
      .compaction({ firstKeptEntryId: "e3", summary: "old summary" }) // e5
      .user("q3") // e6
      .assistant("a3") // e7
      .compaction({ firstKeptEntryId: "e3", summary: "new summary" }) // e8: keeps e3…e7, e5 included
      .user("q4") // e9
      .branchFrom("e7")
      .compactionKeepingNothing("nothing kept") // e10
      .user("q5"); // e11
    expectSameAsPiAtEveryLeaf(session);

    const data = parseSessionText(session.toJsonl());
    expect(ourContext(data, "e9").map((c) => c.entryId)).toEqual(["e8", "e3", "e4", "e6", "e7", "e9"]);
    expect(ourContext(data, "e11").map((c) => c.entryId)).toEqual(["e10", "e11"]);
  });

  it("context edits: null removes, content replaces, strings become one text block for assistant and tool results, the latest edit wins, edits are branch-relative", () => {
    const session = new SessionBuilder()
      .system("prompt") // e1
      .user("read a") // e2
      .toolUse("read", { path: "a" }, "long output", { id: "c1" }) // e3, e4
      .assistant("done reading") // e5
      .customMessage("note", "a note", { n: 1 }) // e6
      .contextEdit("e4", "[pruned]") // e7: tool result, string
      .contextEdit("e5", "short") // e8: assistant, string
      .contextEdit("e2", [{ type: "text", text: "read a (edited)" }]) // e9: user, array
      .contextEdit("e6", "edited note") // e10: custom message
      .contextEdit("e1", "ignored for system") // e11
      .user("next") // e12
      .contextEdit("e12", null) // e13
      .contextEdit("e4", "[pruned again]") // e14: latest wins
      .branchFrom("e6")
      .user("other branch") // e15: sees none of the edits
      .contextEdit("e3", null); // e16: removes the assistant's tool call message
    expectSameAsPiAtEveryLeaf(session);

    const data = parseSessionText(session.toJsonl());
    const edited = ourContext(data, "e14");
    expect(edited.map((c) => c.entryId)).toEqual(["e2", "e3", "e4", "e5", "e6"]);
    expect(edited[2].message).toMatchObject({ role: "toolResult", toolCallId: "c1", content: [{ type: "text", text: "[pruned again]" }] });
    expect(edited[3].message).toMatchObject({ role: "assistant", content: [{ type: "text", text: "short" }] });
    expect(edited[4].message).toMatchObject({ role: "custom", content: "edited note" });
    expect(ourContext(data, "e15").map((c) => c.entryId)).toEqual(["e2", "e3", "e4", "e5", "e6", "e15"]);
    // the raw entries are untouched
    expect(data.byId.get("e4")).toMatchObject({ message: { content: [{ type: "text", text: "long output" }] } });
  });

  it("an edit with null on a compaction removes its summary, as in Pi", () => {
    const session = new SessionBuilder().user("q1").assistant("a1").compactionKeepingNothing("sum").contextEdit("e3", null).user("q2");
    expectSameAsPiAtEveryLeaf(session);
    expect(ourContext(parseSessionText(session.toJsonl()), "e5").map((c) => c.entryId)).toEqual(["e5"]);
  });

  it("branch summaries and custom messages become branchSummary and custom messages; custom entries and labels add nothing", () => {
    const session = new SessionBuilder()
      .user("start") // e1
      .assistant("ok") // e2
      .user("approach A") // e3
      .assistant("tried A") // e4
      .branchFrom("e2")
      .branchSummary("e4", "Approach A failed.") // e5
      .custom("context-prune-index", { toolCalls: [] }) // e6
      .customMessage("context-prune-summary", "`t1` read a.ts", { toolCallRefs: [{ shortId: "t1", toolCallId: "c1" }] }) // e7
      .customMessage("shown", [{ type: "text", text: "visible" }], undefined, { display: true }) // e8
      .label("e3", "checkpoint") // e9
      .raw({ type: "future_entry_type", payload: 1 }) // e10
      .branchSummary("e4", "") // e11: Pi drops an empty summary
      .user("approach B"); // e12
    expectSameAsPiAtEveryLeaf(session);

    const context = ourContext(parseSessionText(session.toJsonl()), "e12");
    expect(roles(context)).toEqual(["user", "assistant", "branchSummary", "custom", "custom", "user"]);
    expect(context[2].message).toStrictEqual({ role: "branchSummary", summary: "Approach A failed.", fromId: "e4", timestamp: Date.parse(session.entry("e5").timestamp) });
    expect(context[3].message).toMatchObject({ role: "custom", customType: "context-prune-summary", display: false, details: { toolCallRefs: [{ shortId: "t1" }] } });
  });

  it("a message entry without content gets an empty content array, as in Pi", () => {
    const session = new SessionBuilder()
      .raw({ type: "message", message: { role: "user", timestamp: 1 } })
      .raw({ type: "message", message: { role: "assistant", timestamp: 2, stopReason: "stop" } });
    expectSameAsPiAtEveryLeaf(session);
  });

  it("random session trees agree with Pi at every leaf", () => {
    type Step =
      | { kind: "user" | "assistant" | "tool" | "custom" | "customMessage" | "system" }
      | { kind: "branch" | "compaction" | "edit" | "removal" | "branchSummary"; pick: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.constantFrom<Step>({ kind: "user" }, { kind: "assistant" }, { kind: "tool" }, { kind: "custom" }, { kind: "customMessage" }, { kind: "system" }),
      fc.record({ kind: fc.constantFrom("branch" as const, "compaction" as const, "edit" as const, "removal" as const, "branchSummary" as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 40 }), (steps) => {
        const session = new SessionBuilder().user("root");
        for (const s of steps) {
          const ids = session.entries.map((entry) => entry.id);
          const picked = "pick" in s ? ids[s.pick % ids.length] : "";
          switch (s.kind) {
            case "user": session.user("u"); break;
            case "assistant": session.assistant({ text: "a", thinking: "t" }); break;
            case "tool": session.toolUse("read", { path: "p" }, "out"); break;
            case "custom": session.custom("x", { v: 1 }); break;
            case "customMessage": session.customMessage("m", "hello", { d: 1 }); break;
            case "system": session.system("prompt"); break;
            case "branch": session.branchFrom(picked); break;
            case "compaction": session.compaction({ firstKeptEntryId: picked, summary: "s" }); break;
            case "edit": session.contextEdit(picked, "edited"); break;
            case "removal": session.contextEdit(picked, null); break;
            case "branchSummary": session.branchSummary(picked, "summary"); break;
          }
        }
        const data = parseSessionText(session.toJsonl());
        for (const entry of data.entries) {
          expect(ourContext(data, entry.id)).toStrictEqual(piContext(data, entry.id));
        }
      }),
      { numRuns: 300 },
    );
  });
});
