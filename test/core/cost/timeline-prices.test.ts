// The editor's timeline prices each request it estimates by the model that answered it, as the
// session file records it (api, provider, model id): that model's registry prices and caching.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { DEFAULT_CONFIG } from "../../../core/src/settings/config.ts";
import { isMessageEntry } from "../../../core/src/shapes/entries.ts";
import { buildTimeline } from "../../../core/src/view/timeline.ts";

/** Two requests of one session: a long prompt and its answer, then a second prompt; each answer by the model given. */
function session(...models: { api: string; provider: string; model: string }[]) {
  const b = new SessionBuilder();
  b.user("x".repeat(8_000)).assistant("first answer");
  b.user("and then?").assistant("second answer");
  const answers = b.entries.filter((e) => isMessageEntry(e) && e.message.role === "assistant");
  answers.forEach((entry, i) => {
    if (isMessageEntry(entry)) Object.assign(entry.message, models[i]);
  });
  return buildTimeline(b.entries, { config: DEFAULT_CONFIG }).points;
}

const FABLE = { api: "anthropic-messages", provider: "anthropic", model: "claude-fable-5-1" };
const GPT_5 = { api: "openai-responses", provider: "openai", model: "gpt-5" };

describe("the timeline's estimate", () => {
  it("prices a Claude Fable 5.1 request at its own prices: $10 a million in, reads at 0.025×, output at 5×", () => {
    const [, second] = session(FABLE, FABLE);
    const e = second!.estimate;
    expect(second!.rules).toBe("anthropic");
    // The first request's 2,000-token prompt is read back from the cache.
    expect(e.cacheRead).toBeGreaterThan(2_000);
    expect(second!.cost).toBeCloseTo((e.cacheRead * 0.025 + e.cacheWrite * 1.25 + e.input + e.output * 5) * 10e-6, 12);
  });

  it("a model switched mid-session prices each request by its own model, the new one's cache starting empty", () => {
    const [first, second] = session(FABLE, GPT_5);
    expect(first!.rules).toBe("anthropic");
    expect(second!.rules).toBe("openai");
    const e = second!.estimate;
    expect(e.cacheRead).toBe(0);
    // gpt-5: $1.25 a million in, output at 8×, no write premium.
    expect(e.cacheWrite).toBe(0);
    expect(second!.cost).toBeCloseTo((e.input + e.output * 8) * 1.25e-6, 12);
  });
});
