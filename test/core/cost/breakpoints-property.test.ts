// The frontier breakpoint over generated payloads of every shape Pi 1.6 sends (derived from the
// recordings of test/fixtures/payloads/), each result judged by the providers' documented rules as
// test/helpers/provider-cache-rules.ts restates them: at most four markers counted everywhere, none
// on thinking, empty text or inside a system message, nothing else changed, and the payloads of apis
// that do not cache at markers untouched; and where a call is pending, its frontier marked.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { markerWireOf, placeFrontierBreakpoint, type BreakpointMemory } from "../../../core/src/cost/breakpoints.ts";
import { markedCaseArb, unmarkedCaseArb, type PayloadCase } from "../../helpers/payload-variations.ts";
import { cacheRuleViolations, expectedFrontier, markerPaths } from "../../helpers/provider-cache-rules.ts";

const SEED = 20261207;

/** The pruner's two placements of a case: the previous request's (whose memory the current one gets), then the current one's. */
function placeCase(c: PayloadCase) {
  const wire = markerWireOf(c.model);
  const before = placeFrontierBreakpoint(c.previous.payload, wire, c.previous.pending, undefined);
  const memory: BreakpointMemory | undefined = c.memory === "previous" ? before.memory : c.memory === "none" ? undefined : { frontier: c.memory, prefixHash: "from another request" };
  return { before: before.payload, sent: placeFrontierBreakpoint(c.current.payload, wire, c.current.pending, memory).payload };
}

describe("the frontier breakpoint over generated payloads of every recorded shape", () => {
  it("every request stays within the provider's rules", () => {
    fc.assert(
      fc.property(markedCaseArb, (c) => {
        const { before, sent } = placeCase(c);
        expect(cacheRuleViolations(c.model, c.previous.payload, before)).toEqual([]);
        expect(cacheRuleViolations(c.model, c.current.payload, sent)).toEqual([]);
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it("with a call pending, the block before its result carries a marker", () => {
    fc.assert(
      fc.property(markedCaseArb, (c) => {
        const frontier = c.current.oldestPending && expectedFrontier(c.model.api, c.current.payload, c.current.oldestPending);
        fc.pre(frontier !== undefined);
        expect(markerPaths(placeCase(c).sent)).toContain(frontier);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it("payloads of apis that do not cache at markers go as Pi built them", () => {
    fc.assert(
      fc.property(unmarkedCaseArb, (c) => {
        const placed = placeFrontierBreakpoint(c.payload, markerWireOf(c.model), c.pending, c.memory && { frontier: c.memory, prefixHash: "x" });
        expect(placed.payload).toBe(c.payload);
        expect(cacheRuleViolations(c.model, c.payload, placed.payload)).toEqual([]);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("over 20,000 generated request pairs, none carries more than four markers", () => {
    const cases = fc.sample(markedCaseArb, { seed: SEED + 1, numRuns: 20_000 });
    const over = cases.filter((c) => markerPaths(placeCase(c).sent).length > 4);
    expect(over.length).toBe(0);
  }, 120_000);
});
