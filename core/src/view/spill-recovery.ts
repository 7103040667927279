// Whether the spilled calls of a session view can still be given back: their files looked up in
// the session's blobs folder (by the recorded path, or by its name when the folder moved), nothing
// outside it looked at and nothing read. The part of "can this output be recovered" that needs the
// disk; the session view answers the rest from the entries (CallView.unrecoverable).
import { locateSpillFile } from "../session/blobs.ts";
import type { CallView } from "./session-view.ts";
import { isPrunedState } from "./call-state.ts";

/** For each spilled call (by occurrence key) whose file cannot be read back, why. */
export async function spillRecovery(calls: readonly Pick<CallView, "occurrenceKey" | "spillPath" | "state">[], sessionFile: string, sessionId: string | undefined): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const checks = new Map<string, Promise<{ ok: true } | { ok: false; reason: string }>>();
  for (const call of calls) {
    if (!call.spillPath || !isPrunedState(call.state)) continue;
    let check = checks.get(call.spillPath);
    if (!check) checks.set(call.spillPath, (check = locateSpillFile(sessionFile, sessionId, call.spillPath)));
    const found = await check;
    if (!found.ok) out.set(call.occurrenceKey, `its spill file cannot be read back: ${found.reason}`);
  }
  return out;
}
