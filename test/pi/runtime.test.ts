import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";
import { OnceReporter, PrunerRuntime } from "../../pi-extension/src/runtime.ts";

function runtime(overrides: Partial<typeof DEFAULT_CONFIG>) {
  const seen: string[] = [];
  const rt = new PrunerRuntime({ ...DEFAULT_CONFIG, ...overrides }, new OnceReporter((m) => seen.push(m)));
  return { rt, seen };
}

describe("budget triggers", () => {
  it("autoBudgetThreshold fires when the context share reaches it", () => {
    const { rt } = runtime({ autoBudgetThreshold: 0.5 });
    expect(rt.budgetTrigger(40_000, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(50_000, 100_000)).toBe("budget");
  });

  it("budgetTurnDelta fires on a jump between two turns, never on the first turn after a reload", () => {
    const { rt } = runtime({ budgetTurnDelta: 0.2 });
    expect(rt.budgetTrigger(50_000, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(60_000, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(85_000, 100_000)).toBe("budget-delta");
    rt.rebuild([]);
    expect(rt.budgetTrigger(99_000, 100_000)).toBeUndefined();
  });

  it("unknown usage (right after a compaction) is no trigger and keeps the previous share", () => {
    const { rt } = runtime({ budgetTurnDelta: 0.2 });
    rt.budgetTrigger(30_000, 100_000);
    expect(rt.budgetTrigger(null, 100_000)).toBeUndefined();
    expect(rt.budgetTrigger(55_000, 100_000)).toBe("budget-delta");
  });

  it("both off by default", () => {
    const { rt } = runtime({});
    expect(rt.budgetTrigger(99_000, 100_000)).toBeUndefined();
  });
});

describe("reporting", () => {
  it("the same problem is reported once per session", () => {
    const { rt, seen } = runtime({});
    rt.reporter.report("x", "summarizer failed");
    rt.reporter.report("x", "summarizer failed");
    expect(seen).toEqual(["summarizer failed"]);
  });
});
