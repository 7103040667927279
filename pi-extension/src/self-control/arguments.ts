import { Type } from "typebox";

// Some models send an object parameter as a JSON string (`"target": "{\"by_tool_call_id\": …}"`).
// Pi validates arguments before a tool runs and cannot turn a string into an object, so every
// self-control tool parses such strings back first (its `prepareArguments`).

/** `args` with each of `keys` that holds a JSON object as a string parsed back into the object. */
export function parseObjectArguments<T>(args: unknown, keys: readonly string[]): T {
  if (!args || typeof args !== "object") {
    if (typeof args === "string") {
      const parsed = parseObject(args);
      if (parsed) return parseObjectArguments(parsed, keys);
    }
    return args as T;
  }
  let out: Record<string, unknown> | undefined;
  for (const key of keys) {
    const value = (args as Record<string, unknown>)[key];
    if (typeof value !== "string") continue;
    const parsed = parseObject(value);
    if (!parsed) continue;
    out ??= { ...(args as Record<string, unknown>) };
    out[key] = parsed;
  }
  return (out ?? args) as T;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The parameter that names one message, in the three forms a shrink and a cancel both take (the
 * shapes pi-mulligan's tools take): by tool-call id, by tool name and occurrence, or by text.
 */
export function messageTargetSchema(description: string) {
  return Type.Union(
    [
      Type.Object({ by_tool_call_id: Type.String() }),
      Type.Object({ by_tool_name: Type.String(), occurrence: Type.Optional(Type.Union([Type.Literal("first"), Type.Literal("last")])) }),
      Type.Object({ by_content_includes: Type.String() }),
    ],
    { description },
  );
}
