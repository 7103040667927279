// Step 5 of the render (off by default): thinking leaves all but the newest assistant turns.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { freshIndex, piContext } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import type { AssistantMessage } from "../../../core/src/shapes/messages.ts";

// Each step's own turn counting, as the turns pass (cacheAware off); epochs.test.ts counts them by flushes.
const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"], cacheAware: false };

describe("thinking strip", () => {
  function thinkingSession(turns: number) {
    const b = new SessionBuilder().user("go");
    for (let i = 0; i < turns; i++) b.assistant({ thinking: `t${i}`, toolCalls: [{ name: "bash", args: { command: `step ${i}` } }] }).toolResult(b.lastToolCallIds[0]!, "bash", "ok");
    return b;
  }

  it("is off by default", () => {
    const b = thinkingSession(20);
    const input = piContext(b);
    expect(DEFAULT_CONFIG.thinkingStrip.enabled).toBe(false);
    expect(renderModelView(input, freshIndex(b), config).messages).toBe(input);
  });

  it("turned on, keeps thinking on the newest keepLastTurns assistant turns and drops it whole from older ones", () => {
    const b = thinkingSession(5);
    const out = renderModelView(piContext(b), freshIndex(b), { ...config, thinkingStrip: { enabled: true, keepLastTurns: 2 } }).messages;
    const kinds = out.filter((m): m is AssistantMessage => m.role === "assistant").map((m) => m.content.map((c) => c.type).join("+"));
    expect(kinds).toEqual(["toolCall", "toolCall", "toolCall", "thinking+toolCall", "thinking+toolCall"]);
  });

  it("never strips the newest turn, even with keepLastTurns 0", () => {
    const b = thinkingSession(2);
    const out = renderModelView(piContext(b), freshIndex(b), { ...config, thinkingStrip: { enabled: true, keepLastTurns: 0 } }).messages;
    expect((out.filter((m) => m.role === "assistant").at(-1) as AssistantMessage).content[0]!.type).toBe("thinking");
  });
});
