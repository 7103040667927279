// The model view (`pi-pruner view`, the editor's "Show Model View"): what Pi would send for a
// branch without the pruner, what the model is sent, and both as plain text.
import { describe, expect, it } from "vitest";
import { prunedSessionBuilder } from "../../helpers/fixtures.ts";
import { piContext, resultTexts } from "../../helpers/prune-session.ts";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { parseSessionText } from "../../../core/src/session/session-reader.ts";
import { rebuildIndex } from "../../../core/src/prune/prune-index.ts";
import { messageChars } from "../../../core/src/shapes/size.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";
import { buildModelView, messagesAsText, renderBranch, sizesLine } from "../../../core/src/view/model-view.ts";
import { createRenderMemo } from "../../../core/src/render/render.ts";

const config = DEFAULT_CONFIG;
const summaries = (messages: readonly AgentMessage[]) => messages.filter((m) => m.role === "custom" && m.customType === "context-prune-summary");
const chars = (messages: readonly AgentMessage[]) => messages.reduce((n, m) => n + messageChars(m), 0);

describe("buildModelView", () => {
  it("raw is what Pi would send without the pruner: whole outputs, none of its summaries; sent has the stubs and the summary", () => {
    const view = buildModelView(parseSessionText(prunedSessionBuilder().toJsonl()), { config });
    expect(summaries(view.rawMessages)).toEqual([]);
    expect(resultTexts(view.rawMessages)).toEqual(["# Gate\nAlways run the gate.", "A".repeat(1200), "B".repeat(80_000), "A".repeat(1200)]);
    expect(summaries(view.messages)).toHaveLength(1);
    const sent = resultTexts(view.messages);
    expect(sent[0]).toBe("# Gate\nAlways run the gate.");
    expect(sent.slice(1).every((t) => !t.includes("AAAA") && !t.includes("BBBBBB"))).toBe(true);
    expect(sent[2]).toContain("/blobs/c3.txt");
    expect([view.rawChars, view.modelChars]).toEqual([chars(view.rawMessages), chars(view.messages)]);
    expect(view.modelChars).toBeLessThan(view.rawChars / 10);
    expect(view.renderError).toBeUndefined();
  });

  it("with nothing pruned, raw and sent are the same messages and the same size", () => {
    const b = new SessionBuilder().user("hi").toolUse("read", { path: "a.ts" }, "A").assistant("ok");
    const view = buildModelView(parseSessionText(b.toJsonl()), { config });
    expect(view.messages).toEqual(view.rawMessages);
    expect(view.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(view.modelChars).toBe(view.rawChars);
  });

  it("with pruning off, what is sent is Pi's context as it is: the pruner's summaries are counted in what is sent, not in raw", () => {
    const view = buildModelView(parseSessionText(prunedSessionBuilder().toJsonl()), { config: { ...config, enabled: false } });
    expect(summaries(view.messages)).toHaveLength(1);
    expect(summaries(view.rawMessages)).toEqual([]);
    expect([view.rawChars, view.modelChars]).toEqual([chars(view.rawMessages), chars(view.messages)]);
    expect(view.modelChars).toBe(view.rawChars + chars(summaries(view.messages)));
  });

  it("a render made once, remembering nothing for a next request, sends and measures the same as the render that remembers", () => {
    const b = prunedSessionBuilder();
    const index = rebuildIndex(b.entries).index;
    const alone = renderBranch(b.entries, index, config);
    const shared = renderBranch(b.entries, rebuildIndex(b.entries).index, config, createRenderMemo());
    expect([alone.rawChars, alone.modelChars]).toEqual([shared.rawChars, shared.modelChars]);
    expect(alone.messages).toEqual(shared.messages);
    expect(alone.stats).toEqual(shared.stats);
  });

  it("shows the branch of the leaf it is given: another branch's pruning is not on it", () => {
    const b = prunedSessionBuilder();
    const firstUser = b.entries.find((e) => e.type === "message")!.id;
    b.branchFrom(firstUser).toolUse("read", { path: "other.ts" }, "other").assistant("other branch");
    const otherLeaf = b.lastId;
    const data = parseSessionText(b.toJsonl());
    const mainLeaf = b.entries.filter((e) => e.type === "message").find((e) => JSON.stringify(e).includes("same as before"))!.id;
    const other = buildModelView(data, { config, leafId: otherLeaf });
    expect(other.leafId).toBe(otherLeaf);
    expect(resultTexts(other.messages)).toEqual(["other"]);
    const main = buildModelView(data, { config, leafId: mainLeaf });
    expect(main.leafId).toBe(mainLeaf);
    expect(summaries(main.messages)).toHaveLength(1);
  });
});

describe("renderBranch", () => {
  it("a render that throws leaves the messages as Pi would send them and names the error, as the live pruner does", () => {
    const b = prunedSessionBuilder();
    const index = rebuildIndex(b.entries).index;
    Object.defineProperty(index, "byToolCallId", {
      get() {
        throw new Error("index damaged");
      },
    });
    const view = renderBranch(b.entries, index, config);
    expect(view.renderError).toBe("index damaged");
    expect(view.messages).toEqual(piContext(b));
    expect(resultTexts(view.messages)[1]).toBe("A".repeat(1200));
  });
});

describe("sizesLine", () => {
  it("one header line with both sizes in characters and in estimated tokens", () => {
    expect(sizesLine({ rawChars: 12_000, modelChars: 4_000 })).toBe("# Characters raw 12,000 → sent 4,000 (-67%); tokens ≈ 3,000 → 1,000 (estimated as characters / 4); the system prompt is not included\n");
    expect(sizesLine({ rawChars: 4_000, modelChars: 4_000 })).toBe("# Characters raw 4,000 → sent 4,000; tokens ≈ 1,000 → 1,000 (estimated as characters / 4); the system prompt is not included\n");
  });
});

describe("messagesAsText", () => {
  it("one numbered section per message under its role: thinking, calls with arguments and id, the result's tool and id, errors marked", () => {
    const b = new SessionBuilder().user("go").assistant({ thinking: "which file?", text: "Reading.", toolCalls: [{ name: "read", args: { path: "a.ts" }, id: "c1" }] });
    b.toolResult("c1", "read", "ENOENT: a.ts", { isError: true }).customMessage("notice", "file changed on disk");
    expect(messagesAsText(piContext(b))).toBe(
      [
        "── 1. user ──\ngo",
        '── 2. assistant ──\n<thinking>\nwhich file?\n</thinking>\nReading.\n→ read {"path":"a.ts"}  [c1]',
        "── 3. tool result · read · c1 · error ──\nENOENT: a.ts",
        "── 4. custom (sent as user) · notice ──\nfile changed on disk",
      ].join("\n\n") + "\n",
    );
  });

  it("arguments nested too deep to write as JSON are shown cut at 100 levels instead of failing the view", () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) deep = { inner: deep };
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "write", args: deep, id: "c1" }] });
    expect(messagesAsText(piContext(b))).toContain(`→ write ${'{"inner":'.repeat(100)}"[nested deeper than 100 levels]"${"}".repeat(100)}  [c1]`);
  });
});
