import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script without type declarations
import { documentedGraph, importGraph } from "../scripts/architecture-graph.mjs";

describe("docs/architecture.md", () => {
  it("shows the import graph the code really has (regenerate with `npm run graph -- --write`)", () => {
    const documented = documentedGraph();
    expect(documented, "docs/architecture.md has no import graph between its markers").toBeDefined();
    expect(documented).toBe(importGraph());
  });
});
