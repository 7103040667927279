// The pruner's payloads read back from a session file: each reader gives its type with only the
// fields of the right type, or says why it cannot, and never throws on what a file holds.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  readChainData,
  readDedupAliasData,
  readFrontierData,
  readIndexData,
  readSettingsData,
  readStatsData,
  readSummaryDetails,
  readToolCallRecord,
  readToolCallRef,
} from "../../../core/src/shapes/read-payloads.ts";

const PAYLOAD_READERS = [readIndexData, readSummaryDetails, readDedupAliasData, readChainData, readFrontierData, readStatsData, readSettingsData];
const ITEM_READERS = [readToolCallRef, readToolCallRecord];

describe("the payload readers", () => {
  it("never throw on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const read of [...PAYLOAD_READERS, ...ITEM_READERS]) read(value);
      }),
      { numRuns: 500 },
    );
  });

  it("give a problem (a string) for a payload that is not an object, and no item for an item that is not one", () => {
    const notObjects = fc.oneof(fc.constant(null), fc.boolean(), fc.double(), fc.string(), fc.array(fc.jsonValue(), { maxLength: 3 }));
    fc.assert(
      fc.property(notObjects, (value) => {
        for (const read of PAYLOAD_READERS) expect(typeof read(value)).toBe("string");
        for (const read of ITEM_READERS) expect(read(value)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it("an index entry: records and refs are read one by one, the unreadable ones counted or left out", () => {
    const good = { toolCallId: "c1", toolName: "read", resultText: "x", resultTimestamp: 5 };
    const read = readIndexData({ toolCalls: [good, { toolName: "read" }, { toolCallId: "c2", toolName: "bash", spillPath: 7, args: "no" }], refs: [{ shortId: "t1", toolCallId: "c1" }, { shortId: 3 }], backfilled: true });
    expect(read).toEqual({
      toolCalls: [good, { toolCallId: "c2", toolName: "bash" }],
      refs: [{ shortId: "t1", toolCallId: "c1" }],
      backfilled: true,
      unreadableRecords: 1,
    });
    // A record with every field of the right type is the very object the file held.
    expect(typeof read !== "string" && read.toolCalls![0]).toBe(good);
    expect(readIndexData({ refs: [] })).toEqual({ refs: [], unreadableRecords: 0 });
  });

  it("a summary's details keep a list when the payload held one (refs are told from bare ids), with only its readable items", () => {
    expect(readSummaryDetails({ toolCallRefs: [{ toolCallId: "c1", shortId: "", resultTimestamp: "9" }, 4], toolNames: ["read", 2], turnIndex: 3 })).toEqual({
      toolCallRefs: [{ toolCallId: "c1" }],
      toolNames: ["read"],
      turnIndex: 3,
    });
    expect(readSummaryDetails({ toolCallIds: ["c1", null] })).toEqual({ toolCallIds: ["c1"] });
    expect(readSummaryDetails([1])).toBe("its details are not an object");
  });

  it("a dedup alias and a chain need their ids; other fields of the wrong type are left out", () => {
    expect(readDedupAliasData({ newToolCallId: "c2" })).toBe("without newToolCallId/originalToolCallId");
    expect(readDedupAliasData({ newToolCallId: "c2", originalToolCallId: "c1", newResultTimestamp: "5", originalResultTimestamp: 4 })).toEqual({ newToolCallId: "c2", originalToolCallId: "c1", originalResultTimestamp: 4 });
    expect(readChainData({ blockId: "b1" })).toBe("without blockId/startUserTimestamp");
    expect(readChainData({ blockId: "b1", startUserTimestamp: 1, toolRefs: ["t1", 2], droppedToolCallIds: "c1", bodySource: 5, rangeSummaryText: "r", extra: true })).toEqual({
      blockId: "b1",
      startUserTimestamp: 1,
      toolRefs: ["t1"],
      rangeSummaryText: "r",
    });
  });

  it("frontier and stats keep only their fields of the right type, numbers finite, in the order they are written", () => {
    const frontier = readFrontierData({ outcome: "summarized", attemptedBatchCount: 2, lastAttemptedToolCallId: "c1", rawCharCount: Number.NaN, keepsEpoch: true, other: 1 });
    expect(frontier).toEqual({ lastAttemptedToolCallId: "c1", attemptedBatchCount: 2, outcome: "summarized", keepsEpoch: true });
    expect(Object.keys(frontier)).toEqual(["lastAttemptedToolCallId", "attemptedBatchCount", "outcome", "keepsEpoch"]);
    expect(readStatsData({ totalCost: "1", callCount: 3, totalInputTokens: Infinity })).toEqual({ callCount: 3 });
  });

  it("a settings entry: its version and its block, each only when of the right type", () => {
    expect(readSettingsData({ version: "0.1.0", config: { enabled: false } })).toEqual({ version: "0.1.0", config: { enabled: false } });
    expect(readSettingsData({ version: 1, config: [] })).toEqual({});
  });
});
