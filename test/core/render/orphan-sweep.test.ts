// Step 4 of the render: every tool call is answered right after its turn, and nothing else is.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { freshIndex, piContext } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { renderModelView } from "../../../core/src/render/render.ts";

const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"] };

describe("orphan sweep", () => {
  it("a result displaced by a custom message is moved back to its turn; a stray result is dropped", () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a" } }, { name: "read", args: { path: "b" } }] });
    b.toolResult("call_1", "read", "A").customMessage("notice", "file changed on disk").toolResult("call_2", "read", "B");
    b.toolResult("call_9", "read", "stray");
    const out = renderModelView(piContext(b), freshIndex(b), config);
    expect(out.messages.map((m) => (m.role === "toolResult" ? `result ${m.toolCallId}` : m.role))).toEqual(["user", "assistant", "result call_1", "result call_2", "custom"]);
    expect(out.stats).toMatchObject({ resultsReattached: 1, orphansDropped: 1 });
  });

  it("a call whose result never came gets an error result, and a duplicate result is dropped", () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "read", args: { path: "a" } }, { name: "read", args: { path: "b" } }] });
    b.toolResult("call_1", "read", "A").toolResult("call_1", "read", "A again").user("next");
    const out = renderModelView(piContext(b), freshIndex(b), config).messages;
    expect(out.slice(2, 4)).toEqual([
      expect.objectContaining({ toolCallId: "call_1", content: [{ type: "text", text: "A" }] }),
      expect.objectContaining({ toolCallId: "call_2", isError: true, content: [{ type: "text", text: "[No result for this call is in the context.]" }] }),
    ]);
    expect(out[4]).toMatchObject({ role: "user" });
  });

  it("results of an aborted turn are dropped: Pi never replays that turn", () => {
    const b = new SessionBuilder().user("go").assistant({ toolCalls: [{ name: "bash", args: { command: "sleep 9" } }], stopReason: "aborted" });
    b.toolResult("call_1", "bash", "aborted").user("again");
    const out = renderModelView(piContext(b), freshIndex(b), config).messages;
    expect(out.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });
});
