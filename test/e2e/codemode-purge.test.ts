// The error purge on Pi's grammar tool: a failed `codemode` script's arguments are purged, and Pi
// can still send the call. On a model with `compat.supportsOpenAIGrammarTools` Pi's
// openai-completions converter sends a codemode call as a custom tool call whose input is the
// `code` argument, and throws (before any request goes out) when `code` is not a string.
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequest } from "../helpers/model-server.ts";
import { runPi } from "../helpers/run-pi.ts";
import { EXTENSION, agentRequests, scriptedPi } from "../helpers/pruner-e2e.ts";
import { NO_NUDGES } from "../helpers/request-equality.ts";

const pi = scriptedPi();
afterEach(pi.stop);

// About 800 characters of script that throws on its first line.
const SCRIPT = [
  'throw new Error("config.json is missing");',
  ...Array.from({ length: 16 }, (_, i) => `const step${String(i).padStart(2, "0")} = await tools.read({ path: "src/part-${i}.ts" }); // never reached`),
].join("\n");

interface SentCall {
  id: string;
  type: string;
  custom?: { name: string; input: unknown };
  function?: { name: string; arguments: string };
}

/** The codemode calls of a request as Pi sent them (the raw body: a custom call has no `function`). */
function codemodeCalls(req: ModelRequest): SentCall[] {
  const body = JSON.parse(req.rawBody) as { messages: { tool_calls?: SentCall[] }[] };
  return body.messages.flatMap((m) => m.tool_calls ?? []).filter((c) => (c.custom?.name ?? c.function?.name) === "codemode");
}

describe("the error purge on a grammar tool (codemode) in real Pi", () => {
  it("after a failed long script is purged, every later prompt is answered and carries the call with its code a string", async () => {
    expect(SCRIPT.length).toBeGreaterThan(750);
    const later = ["what now?", "and then?", "anything else?", "done?"];
    const { server, ws } = await pi.start(
      [
        { toolCalls: [{ name: "codemode", arguments: { code: SCRIPT } }] },
        { text: "The script failed: config.json is missing." },
        { text: "I will wait." },
        ...later.map((_, i) => ({ text: `answer ${i + 1}` })),
      ],
      {
        settings: {
          defaultTools: ["+codemode"],
          contextPrune: { pruneOn: "on-demand", cacheAware: false, selfControl: NO_NUDGES },
        },
        model: { extra: { compat: { supportsOpenAIGrammarTools: true } } },
      },
    );
    const run = await runPi({ workspace: ws, extension: EXTENSION, prompts: ["run the setup script", "wait", "/pruner now", ...later], timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(`${run.stdout}\n${run.stderr}`).not.toContain("requires argument");

    const requests = agentRequests(server.requests);
    // The call, its answer, "wait", and one request per later prompt: each later prompt reached the model.
    expect(requests.map((r) => r.lastUserText)).toEqual(["run the setup script", "run the setup script", "wait", ...later]);
    const result = requests[1]!.body.messages!.find((m) => m.role === "tool");
    expect(String(result?.content)).toContain("config.json is missing");

    // Pi sent the call as a grammar (custom) call, with the whole script before the purge.
    const [first] = codemodeCalls(requests[1]!);
    expect(first).toMatchObject({ type: "custom", custom: { name: "codemode", input: SCRIPT } });
    for (const req of requests.slice(3)) {
      const calls = codemodeCalls(req);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.type).toBe("custom");
      expect(typeof calls[0]!.custom!.input).toBe("string");
    }
    // The purge happened: the last requests carry a shortened script, the same bytes each time.
    const purged = requests.slice(-2).map((r) => codemodeCalls(r)[0]!.custom!.input as string);
    expect(purged[0]!.length).toBeLessThan(SCRIPT.length / 2);
    expect(purged[0]!.startsWith(SCRIPT.slice(0, 40))).toBe(true);
    expect(purged[1]).toBe(purged[0]);
  }, 90_000);
});
