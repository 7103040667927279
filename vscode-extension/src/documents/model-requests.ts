// The requests a branch sent, for the model view: the list a person picks from, and what one of
// them sent, rendered by core with the settings in force then. Stepping through them in order
// reuses one renderer per session, which carries its state forward instead of starting over; what
// each request cost is worked out once per branch (it walks the whole branch) and kept beside it.
import { type AnyEntry, BodyCache, branchCost, getBranch, modelRequests, RequestRenderer, type ModelRequestRef, type RenderConfig, type RequestCost, type RequestView, type SessionData, type BranchCost } from "@pi-pruner/core";

/** Which view of a branch a model document shows: a request already sent (1-based), the last one sent, or the next one. */
export type RequestChoice = number | "last" | "next";

/** Parses what a document URI or a command names; anything else is the last request sent. */
export function requestChoiceOf(value: unknown): RequestChoice {
  if (value === "next") return "next";
  if (typeof value === "number" && Number.isInteger(value) && value >= 1) return value;
  return "last";
}

const listed = new WeakMap<SessionData, { leafId: string | null; entries: number; requests: ModelRequestRef[] }>();

/** The requests of the branch that ends at `leafId`, in order (worked out again only when the file was read further). */
export function requestsOf(data: SessionData, leafId: string | null): ModelRequestRef[] {
  const known = listed.get(data);
  if (known && known.leafId === leafId && known.entries === data.entries.length) return known.requests;
  const requests = leafId === null ? [] : modelRequests(getBranch(data, leafId).entries);
  listed.set(data, { leafId, entries: data.entries.length, requests });
  return requests;
}

/** The request a choice names on a branch of `count` requests: undefined for the next request, or when none was sent. */
export function requestNumber(choice: RequestChoice, count: number): number | undefined {
  if (choice === "next" || count === 0) return undefined;
  return choice === "last" ? count : choice;
}

interface CachedRenderer {
  entries: readonly AnyEntry[];
  renderer: RequestRenderer;
  config: RenderConfig;
  /** What every request of the branch cost, once a header asked. */
  costs?: BranchCost;
}

/**
 * The longest branch whose cost a model view works out: the cost walks every request of the branch
 * in the extension host, which nothing else can use meanwhile (a 1,346-request branch took seconds,
 * and the time grows faster than the branch).
 */
export const COST_REQUESTS_MAX = 1000;

/** One renderer per session file, for the branch and bodies it was made from. */
export class RequestViews {
  private readonly renderers = new Map<string, CachedRenderer>();

  /** What request `n` of the branch at `leafId` sent; bodies left on disk are read back through `bodies`. */
  async render(path: string, data: SessionData, leafId: string | null, n: number, config: RenderConfig, bodies: BodyCache): Promise<RequestView> {
    return (await this.cached(path, data, leafId, config, bodies)).renderer.render(n);
  }

  /**
   * What request `n` of the branch at `leafId` cost and why (undefined past the last one sent);
   * "too long" for a branch of more than COST_REQUESTS_MAX requests, which it does not walk.
   */
  async cost(path: string, data: SessionData, leafId: string | null, n: number, config: RenderConfig, bodies: BodyCache): Promise<RequestCost | "too long" | undefined> {
    const cached = await this.cached(path, data, leafId, config, bodies);
    if (!cached.costs && cached.renderer.count > COST_REQUESTS_MAX) return "too long";
    cached.costs ??= branchCost(cached.entries, { config });
    return cached.costs.requests[n - 1];
  }

  /** The renderer of the branch as it is now: the one kept, unless the branch, its bodies or the settings changed. */
  private async cached(path: string, data: SessionData, leafId: string | null, config: RenderConfig, bodies: BodyCache): Promise<CachedRenderer> {
    const branch = getBranch(data, leafId);
    const entries = await bodies.withBodies(path, data.elided, branch.entries);
    let cached = this.renderers.get(path);
    if (!cached || cached.config !== config || !sameEntries(cached.entries, entries)) {
      cached = { entries, renderer: new RequestRenderer(entries, { config }), config };
      this.renderers.set(path, cached);
    }
    return cached;
  }

  clear(): void {
    this.renderers.clear();
  }
}

function sameEntries(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
