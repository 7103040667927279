// Values read from files (sessions, settings) are input: a field is read only after its holder is
// known to be a JSON object.

/** A JSON object: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
