// The README's configuration tables name every setting there is, under the name a person types.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_CONFIG } from "../core/src/settings/config.ts";
import { EDITABLE_KEYS } from "../pi-extension/src/commands.ts";

const README = readFileSync(join(import.meta.dirname, "..", "README.md"), "utf8");

describe("the README", () => {
  it("lists every contextPrune setting in a configuration table row", () => {
    const rows = new Set([...README.matchAll(/^\| `([A-Za-z.]+)` \|/gm)].map((m) => m[1]));
    const missing = EDITABLE_KEYS.filter((key) => !rows.has(key));
    expect(missing).toEqual([]);
    expect(EDITABLE_KEYS.length).toBeGreaterThan(Object.keys(DEFAULT_CONFIG).length);
  });
});
