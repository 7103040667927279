import { describe, expect, it } from "vitest";
import { MAX_BREAKPOINTS, markerWireOf, placeFrontierBreakpoint, type BreakpointMemory } from "../../../core/src/cost/breakpoints.ts";
import { readPayloadFixture } from "../../fixtures/payloads/scenarios.ts";

// Hand-built payloads as Pi 1.6 sends them: Anthropic Messages (markers on the last tool, the
// system block and the last block of the last message) and chat completions with Anthropic-style
// markers (system message, last tool, last message's last text part).

const MARK = { type: "ephemeral" };
type Json = Record<string, unknown>;

const thinking = (text: string) => ({ type: "thinking", thinking: text, signature: `sig-${text.length}` });
const text = (t: string) => ({ type: "text", text: t });
const toolUse = (id: string) => ({ type: "tool_use", id, name: "read", input: { path: `${id}.ts` } });
const toolResult = (id: string, output = `output of ${id} `.repeat(20)) => ({ type: "tool_result", tool_use_id: id, content: output, is_error: false });

/** An Anthropic body over `messages`, marked where Pi marks it. */
function anthropicBody(messages: Array<{ role: string; content: Json[] }>, system: Json[] = [{ ...text("You are a coding agent."), cache_control: MARK }]): Json {
  const copy = messages.map((m) => ({ ...m, content: m.content.map((b) => ({ ...b })) }));
  const last = copy.at(-1)!;
  if (last.role === "user") last.content[last.content.length - 1] = { ...last.content.at(-1)!, cache_control: MARK };
  return {
    model: "claude-sonnet-4-6",
    system,
    tools: [{ name: "read", input_schema: {} }, { name: "bash", input_schema: {}, cache_control: MARK }],
    messages: copy,
    max_tokens: 1024,
    stream: true,
  };
}

/** A session of three tool turns: t1 alone, then t2 and t3 together, then t4. */
function history(results: Record<string, string> = {}) {
  return [
    { role: "user", content: [text("fix the bug")] },
    { role: "assistant", content: [thinking("look first"), text("Reading."), toolUse("t1")] },
    { role: "user", content: [toolResult("t1", results.t1)] },
    { role: "assistant", content: [thinking("two more"), toolUse("t2"), toolUse("t3")] },
    { role: "user", content: [toolResult("t2", results.t2), toolResult("t3", results.t3)] },
    { role: "assistant", content: [thinking("and one"), toolUse("t4")] },
    { role: "user", content: [toolResult("t4", results.t4)] },
  ];
}

const place = (payload: unknown, pending: readonly string[], memory: BreakpointMemory | undefined) => placeFrontierBreakpoint(payload, "anthropic-messages", pending, memory);
const placeChat = (payload: unknown, pending: readonly string[], memory: BreakpointMemory | undefined) => placeFrontierBreakpoint(payload, "chat-completions", pending, memory);

/** Where a payload carries markers, read independently of the code under test. */
function markers(payload: unknown): string[] {
  const p = payload as Json;
  const out: string[] = [];
  (p.tools as Json[] | undefined)?.forEach((t, i) => t.cache_control && out.push(`tools[${i}]`));
  if (Array.isArray(p.system)) (p.system as Json[]).forEach((s, i) => s.cache_control && out.push(`system[${i}]`));
  (p.messages as Json[]).forEach((m, i) => Array.isArray(m.content) && (m.content as Json[]).forEach((b, j) => b.cache_control && out.push(`messages[${i}][${j}]`)));
  return out;
}

describe("the frontier breakpoint on an Anthropic payload", () => {
  it("lands on the block just before the oldest pending result", () => {
    const body = anthropicBody(history());
    // t2, t3 and t4 pending: t2's result opens message 4, so the block before it is t3's call.
    const placed = place(body, ["t2", "t3", "t4"], undefined);
    expect(markers(placed.payload)).toEqual(["tools[1]", "system[0]", "messages[3][2]", "messages[6][0]"]);
    // t3 and t4 pending: t3's result follows t2's in the same message.
    expect(markers(place(body, ["t3", "t4"], undefined).payload)).toEqual(["tools[1]", "system[0]", "messages[4][0]", "messages[6][0]"]);
    expect(placed.memory?.frontier).toEqual({ message: 3, block: 2 });
  });

  it("copies Pi's marker and leaves the payload it was given untouched", () => {
    const long = { type: "ephemeral", ttl: "1h" };
    const body = anthropicBody(history());
    (body.tools as Json[])[1]!.cache_control = long;
    (body.system as Json[])[0]!.cache_control = long;
    const last = (body.messages as Json[])[6]!.content as Json[];
    last[0] = { ...last[0]!, cache_control: long };
    const before = JSON.stringify(body);
    const placed = place(body, ["t4"], undefined);
    expect(JSON.stringify(body)).toBe(before);
    expect(((placed.payload as Json).messages as Json[])[5]!.content).toEqual([thinking("and one"), { ...toolUse("t4"), cache_control: long }]);
  });

  it("adds nothing when nothing is pending: Pi's own breakpoint already ends the history", () => {
    const body = anthropicBody(history());
    const placed = place(body, [], undefined);
    expect(placed.payload).toBe(body);
    expect(placed.memory?.frontier).toEqual({ message: 6, block: 0 });
  });

  it("with nothing pending on the next request either, marks the previous request's end: the frontier that moved", () => {
    const first = place(anthropicBody(history()), [], undefined);
    const next = [...history(), { role: "assistant", content: [text("Fixed.")] }, { role: "user", content: [text("now the tests")] }];
    const placed = place(anthropicBody(next), [], first.memory);
    expect(markers(placed.payload)).toEqual(["tools[1]", "system[0]", "messages[6][0]", "messages[8][0]"]);
    expect(placed.memory?.frontier).toEqual({ message: 8, block: 0 });
  });

  it("adds nothing where Pi placed no marker (caching off), and forgets what the last request marked", () => {
    const body = anthropicBody(history(), [text("You are a coding agent.")]);
    delete (body.tools as Json[])[1]!.cache_control;
    delete ((body.messages as Json[])[6]!.content as Json[])[0]!.cache_control;
    const previous: BreakpointMemory = { frontier: { message: 3, block: 2 }, prefixHash: "x" };
    const placed = place(body, ["t2", "t3", "t4"], previous);
    expect(placed.payload).toBe(body);
    expect(placed.memory).toBeUndefined();
  });

  it("after the frontier moved, keeps a breakpoint at the previous frontier too, and drops the last tool's to stay at four", () => {
    // The request before the flush: t1 was the oldest pending call.
    const before = place(anthropicBody(history().slice(0, 5)), ["t1", "t2", "t3"], undefined);
    expect(markers(before.payload)).toEqual(["tools[1]", "system[0]", "messages[1][2]", "messages[4][1]"]);
    // The flush stubbed t1..t3's results (everything after the old frontier); t4 is pending now.
    const stubbed = { t1: "[summarized: t1]", t2: "[summarized: t2]", t3: "[summarized: t3]" };
    const after = place(anthropicBody(history(stubbed)), ["t4"], before.memory);
    expect(markers(after.payload)).toEqual(["system[0]", "messages[1][2]", "messages[5][1]", "messages[6][0]"]);
    expect(after.memory?.frontier).toEqual({ message: 5, block: 1 });
    // The request after that: the frontier stayed, so the old one is not kept and the tool's marker stays.
    const next = [...history(stubbed), { role: "assistant", content: [text("Done.")] }, { role: "user", content: [text("thanks")] }];
    expect(markers(place(anthropicBody(next), ["t4"], after.memory).payload)).toEqual(["tools[1]", "system[0]", "messages[5][1]", "messages[8][0]"]);
  });

  it("does not keep the previous frontier when the prefix before it changed", () => {
    const before = place(anthropicBody(history().slice(0, 5)), ["t2", "t3"], undefined);
    expect(before.memory?.frontier).toEqual({ message: 3, block: 2 });
    // t1's result (before the old frontier) changed as well: the old entry is gone, nothing to keep.
    const changed = anthropicBody(history({ t1: "[summarized: t1]", t2: "[summarized]", t3: "[summarized]" }));
    expect(markers(place(changed, ["t4"], before.memory).payload)).toEqual(["tools[1]", "system[0]", "messages[5][1]", "messages[6][0]"]);
  });

  it("keeps the previous frontier after a flush that left nothing pending", () => {
    const before = place(anthropicBody(history()), ["t2", "t3", "t4"], undefined);
    const stubbed = { t2: "[summarized: t2]", t3: "[summarized: t3]", t4: "[summarized: t4]" };
    const next = [...history(stubbed), { role: "assistant", content: [text("Fixed.")] }, { role: "user", content: [text("now the tests")] }];
    const after = place(anthropicBody(next), [], before.memory);
    expect(markers(after.payload)).toEqual(["tools[1]", "system[0]", "messages[3][2]", "messages[8][0]"]);
  });

  it("never sends more than four: two marked system blocks give up all but the last, and with no room nothing is added", () => {
    const twoSystems = [
      { ...text("You are Claude Code."), cache_control: MARK },
      { ...text("You are a coding agent."), cache_control: MARK },
    ];
    const before = place(anthropicBody(history().slice(0, 5), twoSystems), ["t1", "t2", "t3"], undefined);
    // Pi placed four already (tools, both system blocks, the end): the tool's gives way to the frontier.
    expect(markers(before.payload)).toEqual(["system[0]", "system[1]", "messages[1][2]", "messages[4][1]"]);
    // Two to add after the flush: the tool's and the first system block's give way.
    const after = place(anthropicBody(history({ t1: "[s]", t2: "[s]", t3: "[s]" }), twoSystems), ["t4"], before.memory);
    expect(markers(after.payload)).toEqual(["system[1]", "messages[1][2]", "messages[5][1]", "messages[6][0]"]);

    // Four markers and no system block to fold the tools into: there is no room, the payload goes as it is.
    const full = anthropicBody(history(), []);
    (full.tools as Json[])[0]!.cache_control = MARK;
    ((full.messages as Json[])[0]!.content as Json[])[0]!.cache_control = MARK;
    const placed = place(full, ["t4"], undefined);
    expect(placed.payload).toBe(full);
  });

  it("never more than four over every pending set and memory of a session", () => {
    const ids = ["t1", "t2", "t3", "t4"];
    let memory: BreakpointMemory | undefined;
    for (let stubbedUpTo = 0; stubbedUpTo <= ids.length; stubbedUpTo++) {
      const results = Object.fromEntries(ids.slice(0, stubbedUpTo).map((id) => [id, `[summarized: ${id}]`]));
      const placed = place(anthropicBody(history(results)), ids.slice(stubbedUpTo), memory);
      expect(markers(placed.payload).length).toBeLessThanOrEqual(MAX_BREAKPOINTS);
      memory = placed.memory;
    }
  });

  it("finds the pending result by the whole pending sequence when a provider reused an id", () => {
    const reused = [
      { role: "user", content: [text("go")] },
      { role: "assistant", content: [toolUse("call_0")] },
      { role: "user", content: [toolResult("call_0")] },
      { role: "assistant", content: [toolUse("call_0"), toolUse("call_1")] },
      { role: "user", content: [toolResult("call_0"), toolResult("call_1")] },
    ];
    // The older call_0 is flushed already; the pending one is the newer.
    expect(markers(place(anthropicBody(reused), ["call_0", "call_1"], undefined).payload)).toEqual(["tools[1]", "system[0]", "messages[3][1]", "messages[4][1]"]);
    // A pending call the payload does not hold: not this history's request; nothing added, memory kept.
    const memory: BreakpointMemory = { frontier: { message: 1, block: 0 }, prefixHash: "kept" };
    const body = anthropicBody(reused);
    const placed = place(body, ["call_9"], memory);
    expect(placed.payload).toBe(body);
    expect(placed.memory).toBe(memory);
  });

  it("leaves payloads of unknown shapes as they are", () => {
    for (const payload of [null, "text", 42, { input: [{ role: "user", content: "hi" }] }, { messages: "not a list" }]) {
      expect(place(payload, ["t1"], undefined).payload).toBe(payload);
    }
  });
});

describe("the frontier breakpoint on a chat-completions payload", () => {
  /** Chat messages for the same kind of session: t1, then t2 with t3. */
  function chatMessages(results: Record<string, string> = {}): Json[] {
    const call = (id: string) => ({ id, type: "function", function: { name: "read", arguments: "{}" } });
    return [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content: "fix the bug" },
      { role: "assistant", content: "Reading.", tool_calls: [call("t1")] },
      { role: "tool", tool_call_id: "t1", content: results.t1 ?? "output of t1" },
      { role: "assistant", content: null, tool_calls: [call("t2"), call("t3")] },
      { role: "tool", tool_call_id: "t2", content: results.t2 ?? "output of t2" },
      { role: "tool", tool_call_id: "t3", content: results.t3 ?? "output of t3" },
    ];
  }

  /** Marked as Pi marks a model with Anthropic-style cache control. */
  function anthropicStyle(messages: Json[]): Json {
    const copy = messages.map((m) => ({ ...m }));
    copy[0] = { ...copy[0]!, content: [{ type: "text", text: copy[0]!.content, cache_control: MARK }] };
    const last = copy.length - 1;
    copy[last] = { ...copy[last]!, content: [{ type: "text", text: copy[last]!.content, cache_control: MARK }] };
    return { model: "anthropic/claude-sonnet-4.6", messages: copy, tools: [{ type: "function", function: { name: "read" } }, { type: "function", function: { name: "bash" }, cache_control: MARK }], stream: true };
  }

  it("marks the text just before the oldest pending result: the assistant's text, or the result before it", () => {
    const body = anthropicStyle(chatMessages());
    // t2 pending: the message before its result has no text, so the marker goes back to t1's result.
    const placed = placeChat(body, ["t2", "t3"], undefined);
    expect(markers(placed.payload)).toEqual(["tools[1]", "messages[0][0]", "messages[3][0]", "messages[6][0]"]);
    expect(((placed.payload as Json).messages as Json[])[3]).toEqual({ role: "tool", tool_call_id: "t1", content: [{ type: "text", text: "output of t1", cache_control: MARK }] });
    // t3 pending: t2's result comes just before it.
    expect(markers(placeChat(body, ["t3"], undefined).payload)).toEqual(["tools[1]", "messages[0][0]", "messages[5][0]", "messages[6][0]"]);
  });

  it("keeps the previous frontier on the next request when its prefix holds, whether the text was marked as a string or as a part", () => {
    const before = placeChat(anthropicStyle(chatMessages()), ["t2", "t3"], undefined);
    const next = [...chatMessages({ t2: "[summarized]", t3: "[summarized]" }), { role: "assistant", content: "Done." }, { role: "user", content: "thanks" }];
    expect(markers(placeChat(anthropicStyle(next), [], before.memory).payload)).toEqual(["tools[1]", "messages[0][0]", "messages[3][0]", "messages[8][0]"]);
  });

  it("adds nothing where the provider caches prefixes by itself (no marker anywhere)", () => {
    const body = { model: "m", messages: chatMessages(), tools: [{ type: "function", function: { name: "read" } }], stream: true };
    const placed = placeChat(body, ["t2", "t3"], undefined);
    expect(placed.payload).toBe(body);
    expect(placed.memory).toBeUndefined();
  });
});

describe("the frontier breakpoint on recorded payloads of Pi's effort and OAuth requests", () => {
  const oauthEffort = readPayloadFixture("anthropic-oauth-effort");
  const wire = markerWireOf(oauthEffort.model);

  it("reads the wire from the model, never from the roles inside the payload", () => {
    expect(wire).toBe("anthropic-messages");
    expect(markerWireOf({ api: "openai-completions", provider: "mock", id: "m", compat: { cacheControlFormat: "anthropic" } })).toBe("chat-completions");
    expect(markerWireOf({ api: "openai-completions", provider: "openrouter", id: "anthropic/claude-sonnet-4.6" })).toBe("chat-completions");
    // An explicit compat value wins over OpenRouter's detection, as in Pi.
    expect(markerWireOf({ api: "openai-completions", provider: "openrouter", id: "anthropic/claude-sonnet-4.6", compat: { cacheControlFormat: "openai" } })).toBeUndefined();
    for (const api of ["openai-completions", "openai-responses", "openai-codex-responses", "azure-openai-responses", "bedrock-converse-stream", "google-generative-ai", "mistral-conversations", "pi-virtual"]) {
      expect(markerWireOf({ api, provider: "mock", id: "claude-sonnet-4-6" })).toBeUndefined();
    }
    expect(markerWireOf(undefined)).toBeUndefined();
  });

  it("with OAuth's two system blocks and effort messages: the frontier before a's result, four markers in all", () => {
    // The second request: a's result pending; Pi marked the last tool, both system blocks and a's result.
    const body = oauthEffort.payloads[1] as Json;
    expect(markers(body)).toEqual(["tools[1]", "system[0]", "system[1]", "messages[3][0]"]);
    const placed = placeFrontierBreakpoint(body, wire, ["toolu_a"], undefined);
    // a's call (message 2, after the effort message) takes the tool's marker.
    expect(markers(placed.payload)).toEqual(["system[0]", "system[1]", "messages[2][2]", "messages[3][0]"]);
    expect(placed.memory?.frontier).toEqual({ message: 2, block: 2 });
  });

  it("passes over a mid-conversation system message and never marks inside one", () => {
    // The fifth request: c's result pending; the history holds the effort messages and the tool change.
    const body = oauthEffort.payloads[4] as Json;
    const roles = (body.messages as Json[]).map((m) => m.role);
    expect(roles.slice(9, 13)).toEqual(["user", "system", "system", "assistant"]);
    const before = placeFrontierBreakpoint(oauthEffort.payloads[3], wire, [], undefined);
    const placed = placeFrontierBreakpoint(body, wire, ["toolu_c"], before.memory);
    // Pi's end marker on request four was on the tool change (a system message): not a block to mark again.
    expect(markers(oauthEffort.payloads[3])).toEqual(["tools[1]", "system[0]", "system[1]", "messages[10][0]"]);
    expect(before.memory).toBeUndefined();
    // c's call, after the tool change and the effort message, takes the tool's marker.
    expect(markers(placed.payload)).toEqual(["system[0]", "system[1]", "messages[12][2]", "messages[13][0]"]);
  });

  it("leaves a payload alone, and forgets the memory, when the model's api does not cache at markers", () => {
    const body = oauthEffort.payloads[1];
    const placed = placeFrontierBreakpoint(body, undefined, ["toolu_a"], { frontier: { message: 2, block: 2 }, prefixHash: "x" });
    expect(placed.payload).toBe(body);
    expect(placed.memory).toBeUndefined();
  });
});
