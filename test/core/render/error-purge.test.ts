// Step 2 of the render: a failed call's large arguments become a size stub after a cool-down.
import { describe, expect, it } from "vitest";
import { SessionBuilder } from "../../helpers/session-builder.ts";
import { freshIndex, piContext } from "../../helpers/prune-session.ts";
import { DEFAULT_CONFIG, type PruneConfig } from "../../../core/src/settings/config.ts";
import { renderModelView } from "../../../core/src/render/render.ts";
import type { AssistantMessage } from "../../../core/src/shapes/messages.ts";

// Each step's own turn counting, as the turns pass (cacheAware off); epochs.test.ts counts them by flushes.
const config: PruneConfig = { ...DEFAULT_CONFIG, protectedTools: ["todo"], protectedPaths: ["**/skills/**/*.md"], cacheAware: false };

describe("error purge", () => {
  const body = "y".repeat(800);
  function failedWrite() {
    return new SessionBuilder().user("write it").toolUse("write", { path: "a.ts", content: body }, "Error: EACCES", { isError: true });
  }

  it("a failed call's large arguments become a size stub after the cooldown; the error result stays", () => {
    const b = failedWrite().assistant("retrying").user("go on").assistant("ok");
    const out = renderModelView(piContext(b), freshIndex(b), config).messages;
    const call = (out[1] as AssistantMessage).content[0]!;
    const size = JSON.stringify({ path: "a.ts", content: body }).length;
    expect(call).toMatchObject({ type: "toolCall", name: "write", arguments: { _purged: `<purged-errored-args size="${size}"/>` } });
    expect(out[2]).toMatchObject({ role: "toolResult", isError: true, content: [{ type: "text", text: "Error: EACCES" }] });
  });

  it("within the cooldown, below minArgChars, or for a call that succeeded, arguments stay", () => {
    const recent = failedWrite().assistant("retrying");
    const input = piContext(recent);
    expect(renderModelView(input, freshIndex(recent), config).messages).toBe(input);
    const small = new SessionBuilder().user("w").toolUse("write", { path: "a.ts" }, "Error", { isError: true }).assistant("a").assistant("b");
    const smallInput = piContext(small);
    expect(renderModelView(smallInput, freshIndex(small), config).messages).toBe(smallInput);
    const ok = new SessionBuilder().user("w").toolUse("write", { path: "a.ts", content: body }, "written").assistant("a").assistant("b");
    const okInput = piContext(ok);
    expect(renderModelView(okInput, freshIndex(ok), config).messages).toBe(okInput);
  });
});
