// Step 0 of the render: the agent's own rewinds and shrinks. A rewound span leaves what the model
// is sent (the session keeps it); a shrunk message shows the agent's replacement in its place.
// Applied by message identity, unit by unit, so calls and results stay paired. Protected output
// is never rewound or shrunk: a unit that holds some stays whole.
import type { AgentMessage } from "../shapes/messages.ts";
import { isProtected } from "../settings/protection.ts";
import type { PruneConfig } from "../settings/config.ts";
import type { ControlState } from "../control/control-entries.ts";
import { planControls, shrunkMessage } from "../control/spans.ts";

export interface SelfControlStats {
  /** Messages left out by rewinds. */
  rewoundMessages: number;
  /** Messages shown with a shrink's replacement. */
  shrunkMessages: number;
  /** Units inside a rewound span kept because they hold protected output. */
  rewindKeptProtected: number;
}

export interface SelfControlResult {
  messages: AgentMessage[];
  /** The messages a shrink replaced: later steps leave them as the agent wrote them. */
  shrunk: Set<AgentMessage>;
}

export function applySelfControl(
  messages: AgentMessage[],
  controls: ControlState | undefined,
  config: Pick<PruneConfig, "protectedTools" | "protectedPaths">,
  stats: SelfControlStats,
): SelfControlResult {
  const shrunk = new Set<AgentMessage>();
  if (!controls || controls.markers.length === 0) return { messages, shrunk };
  const plan = planControls(messages, controls, (toolName, args) => isProtected(toolName, args, config));
  stats.rewindKeptProtected += plan.keptProtected;
  if (plan.hidden.size === 0 && plan.shrunk.size === 0) return { messages, shrunk };
  const out: AgentMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    if (plan.hidden.has(i)) {
      stats.rewoundMessages++;
      continue;
    }
    const shrink = plan.shrunk.get(i);
    if (!shrink) {
      out.push(messages[i]!);
      continue;
    }
    const replaced = shrunkMessage(messages[i]!, shrink.data.replacement);
    shrunk.add(replaced);
    stats.shrunkMessages++;
    out.push(replaced);
  }
  return { messages: out, shrunk };
}
