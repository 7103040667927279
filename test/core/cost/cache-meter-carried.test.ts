// A meter hashes a request on from the first message that is not the previous request's own
// object (a view's pass over a branch, a replay); billed with fresh copies of every message
// (Pi's live requests, which share no object), the same conversation must cost the same. Random
// conversations: appended turns, earlier messages replaced (stubs) or dropped (chains, rewinds),
// thinking in and before the latest user turn, failed turns, a system prompt and tools that change.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { cacheMeter, WireCache, type ProviderRequest } from "../../../core/src/cost/cache-rules.ts";
import { CACHE_RULES, priceRulesFor, type Pricing } from "../../../core/src/cost/price-rules.ts";
import type { AgentMessage } from "../../../core/src/shapes/messages.ts";

type Op =
  | { kind: "user"; size: number }
  | { kind: "assistant"; thinking: boolean; calls: number; failed: boolean }
  | { kind: "replace"; at: number }
  | { kind: "drop"; at: number; count: number }
  | { kind: "head"; system: number; tools: number }
  | { kind: "send" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("user" as const), size: fc.integer({ min: 1, max: 6000 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("assistant" as const), thinking: fc.boolean(), calls: fc.integer({ min: 0, max: 3 }), failed: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("replace" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("head" as const), system: fc.integer({ min: 0, max: 2 }), tools: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 4, arbitrary: fc.constant({ kind: "send" as const }) },
);

/** Every price model, and breakpoints on a model that strips earlier turns' thinking, and no cache at all. */
const RULES: readonly Pricing[] = [...CACHE_RULES, priceRulesFor({ api: "anthropic-messages", provider: "anthropic", id: "claude-haiku-4-5" }), "none"];

function conversation(ops: readonly Op[]): ProviderRequest[] {
  const requests: ProviderRequest[] = [];
  let messages: AgentMessage[] = [];
  let system = "";
  let tools = "";
  let t = 1;
  let call = 0;
  for (const op of ops) {
    switch (op.kind) {
      case "user":
        messages = [...messages, { role: "user", content: "u".repeat(op.size), timestamp: t++ } as AgentMessage];
        break;
      case "assistant": {
        const ids = Array.from({ length: op.calls }, () => `c${++call}`);
        const content = [
          ...(op.thinking ? [{ type: "thinking", thinking: "th".repeat(400), thinkingSignature: "sig" }] : []),
          { type: "text", text: `reply ${t}` },
          ...ids.map((id) => ({ type: "toolCall", id, name: "read", arguments: { path: id } })),
        ];
        const failed = op.failed && op.calls === 0;
        messages = [...messages, { role: "assistant", content, stopReason: failed ? "error" : ids.length ? "toolUse" : "stop", timestamp: t++ } as unknown as AgentMessage];
        for (const id of ids) messages = [...messages, { role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text: `${id} `.repeat(900) }], isError: false, timestamp: t++ } as AgentMessage];
        break;
      }
      case "replace": {
        if (messages.length === 0) break;
        const at = op.at % messages.length;
        messages = messages.slice();
        messages[at] = { ...messages[at]!, content: [{ type: "text", text: `stub ${at}` }] } as AgentMessage;
        break;
      }
      case "drop":
        if (messages.length === 0) break;
        messages = messages.filter((_, i) => i < op.at % messages.length || i >= (op.at % messages.length) + op.count);
        break;
      case "head":
        system = "s".repeat(op.system * 3000);
        tools = "t".repeat(op.tools * 2000);
        break;
      case "send":
        requests.push({ system, tools, messages });
        break;
    }
  }
  requests.push({ system, tools, messages });
  return requests;
}

describe("a cache meter carried on over a conversation's shared messages", () => {
  it("bills, and prices a change, as it does for fresh copies of every message", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.nat(), (ops, changedFrom) => {
        const requests = conversation(ops);
        for (const rules of RULES) {
          const carried = cacheMeter(rules);
          const copied = cacheMeter(rules);
          for (const request of requests) {
            const copy = { ...request, messages: structuredClone(request.messages) };
            expect(carried.bill(request)).toEqual(copied.bill(copy));
            const at = changedFrom % (request.messages.length + 1);
            expect(carried.readAfterChange(request, at, 2)).toEqual(copied.readAfterChange(copy, at, 2));
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("meters that share one WireCache", () => {
  it("bill, and price a change, as meters that each convert the messages themselves", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.nat(), (ops, changedFrom) => {
        const requests = conversation(ops);
        const wires = new WireCache();
        for (const rules of RULES) {
          // Two meters on one cache, as a session's raw and sent side are: one sees copies of the other's messages.
          const shared = cacheMeter(rules, wires);
          const sharedCopies = cacheMeter(rules, wires);
          const own = cacheMeter(rules);
          for (const request of requests) {
            const copy = { ...request, messages: structuredClone(request.messages) };
            const bill = own.bill(request);
            expect(shared.bill(request)).toEqual(bill);
            expect(sharedCopies.bill(copy)).toEqual(bill);
            const at = changedFrom % (request.messages.length + 1);
            expect(shared.readAfterChange(request, at, 2)).toEqual(own.readAfterChange(request, at, 2));
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});
