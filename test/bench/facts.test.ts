// The planted facts of the bench's "what the agent keeps" suite reach the summarizer's input at
// the default budget: the error in the middle of a build log, the failing tests at its end, a
// file's exports, a search's paths, a linter's warning under its file among notes that merely
// mention failing checks.
import { describe, expect, it } from "vitest";
import { factOutputs } from "../../bench/suites/facts.ts";
import { summarizerInput } from "../../core/src/prune/summarizer-input.ts";
import { DEFAULT_CONFIG } from "../../core/src/settings/config.ts";

describe("planted facts at the default summarizer budget", () => {
  it("every fact of every output is in what the summarizer is sent, within the budget", () => {
    const budget = DEFAULT_CONFIG.summarizerInputChars;
    const missed: string[] = [];
    for (const output of factOutputs()) {
      const sent = summarizerInput(output.toolName, output.args, output.text, budget);
      expect(sent.length, output.name).toBeLessThanOrEqual(budget);
      for (const fact of output.facts) if (!sent.includes(fact.text)) missed.push(`${output.name}: ${fact.text}`);
    }
    expect(missed).toEqual([]);
  });
});
