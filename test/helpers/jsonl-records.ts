// JSONL as Pi writes it (session files, `--mode json` and `--mode rpc` output), read leniently for
// the tests' own checks. Kept apart from core's session reader, so tests can check that reader against it.
import { readFileSync } from "node:fs";

export type JsonRecord = Record<string, any>;

/** Parse JSONL text; split on LF only (not U+2028/9), tolerate CR, blank and bad lines. */
export function parseJsonl(text: string): { records: JsonRecord[]; bad: Array<{ line: number; text: string }> } {
  const records: JsonRecord[] = [];
  const bad: Array<{ line: number; text: string }> = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "") return;
    try {
      records.push(JSON.parse(line) as JsonRecord);
    } catch {
      bad.push({ line: i + 1, text: line });
    }
  });
  return { records, bad };
}

/** The records of a JSONL file (a session file: header first); bad lines are left out. */
export function readJsonlRecords(file: string): JsonRecord[] {
  return parseJsonl(readFileSync(file, "utf8")).records;
}
