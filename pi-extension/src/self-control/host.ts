// What the self-control tools and commands ask of the rest of the extension, and the one host built
// over the runtime's state. The tools write their markers with Pi's own calls (appendEntry,
// sendMessage, setLabel); everything they read about the session comes through here.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { AgentMessage, AnyEntry, ContextMessage, ControlsReader, ControlState, PruneConfig, PruneIndex, RenderStep } from "@pi-pruner/core";
import { buildPiContext, nextSeqOf, visibleContext } from "@pi-pruner/core";
import { branchOf, contextWindowOf, protectsBy, renderSteps } from "../branch-context.ts";

export interface SelfControlHost {
  /** The effective settings (`selfControl` and the protection lists). */
  config(): PruneConfig;
  /** The current branch, root → leaf. */
  branch(ctx: ExtensionContext): AnyEntry[];
  /** The next free marker sequence number on the branch (turn metrics included). */
  nextSeq(ctx: ExtensionContext): number;
  /** The branch's self-control markers now (re-read only when they change). */
  controls(ctx: ExtensionContext): ControlState;
  /** The context Pi builds for the branch with the active markers applied, each message tied to its entry: what a new marker is resolved against. */
  visibleContext(ctx: ExtensionContext): ContextMessage[];
  /** What the model is sent for the branch now, after each step of the render (for the audit). */
  renderSteps(ctx: ExtensionContext): { raw: readonly AgentMessage[]; steps: { step: RenderStep; messages: readonly AgentMessage[] }[] };
  /** Estimated tokens of what the last request sent (after the render), when known. */
  sentTokens(ctx: ExtensionContext): number | undefined;
  /** The model's context window in tokens, when known. */
  contextWindow(ctx: ExtensionContext): number | undefined;
}

/** The one answer every self-control tool and command gives while the feature is off. */
export const SELF_CONTROL_OFF = "pi-pruner: refused: self-control is off (contextPrune.selfControl.enabled is false).";

/** What the host reads of the pruner's live state; everything about the branch comes from Pi's context. */
export interface SelfControlState {
  config(): PruneConfig;
  index(): PruneIndex;
  readonly controls: ControlsReader;
  sentTokens(ctx: ExtensionContext): number | undefined;
}

/** The host over the runtime's state and the branch Pi's context holds. */
export function createSelfControlHost(state: SelfControlState): SelfControlHost {
  return {
    config: () => state.config(),
    branch: branchOf,
    controls: (ctx) => state.controls.read(branchOf(ctx)),
    nextSeq: (ctx) => nextSeqOf(branchOf(ctx)),
    visibleContext: (ctx) => {
      const branch = branchOf(ctx);
      return visibleContext(buildPiContext(branch), state.controls.read(branch), protectsBy(state.config()));
    },
    renderSteps: (ctx) => {
      const branch = branchOf(ctx);
      return renderSteps(branch, state.index(), state.config(), state.controls.read(branch), contextWindowOf(ctx));
    },
    sentTokens: (ctx) => state.sentTokens(ctx),
    contextWindow: contextWindowOf,
  };
}
