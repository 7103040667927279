// The requests a branch sent, for the model view: the list a person picks from, and what one of
// them sent, rendered by core with the settings in force then. Stepping through them in order
// reuses one renderer per session, which carries its state forward instead of starting over; what
// each request cost is worked out once per branch, up to the request asked for, in slices that let
// the extension host go on between them, and kept beside it.
import { type AnyEntry, BodyCache, BranchCostBuilder, getBranch, modelRequests, RequestRenderer, TimelineBuilder, type ModelRequestRef, type RenderConfig, type RequestCost, type RequestView, type SessionData } from "@pi-pruner/core";

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
  /** What the branch's requests cost, once a header asked. */
  costs?: CostWalk;
}

/** How long one slice of the cost walk may hold the extension host. */
const SLICE_MS = 25;
const yieldToHost = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The cost of a branch's requests, worked out in order (each request's cost needs the one before)
 * as far as a header has asked: in slices, so a long branch never holds the extension host up, and
 * what was worked out is kept for the next request asked for.
 */
class CostWalk {
  private readonly costs: RequestCost[] = [];
  private readonly timeline: TimelineBuilder;
  /** The walk so far: one at a time, each going on from where the last stopped. */
  private walking: Promise<void> = Promise.resolve();

  constructor(entries: readonly AnyEntry[], config: RenderConfig) {
    const builder = new BranchCostBuilder(entries);
    this.timeline = new TimelineBuilder(entries, { config }, (point, request, messages) => this.costs.push(builder.add(point, request, messages)));
  }

  /** What request `n` cost (undefined past the last one sent). */
  async request(n: number): Promise<RequestCost | undefined> {
    const walk = this.walking.then(async () => {
      while (this.costs.length < n && !this.timeline.step(SLICE_MS)) await yieldToHost();
    });
    // A walk that failed fails its header; the next one asked for tries again from where it stopped.
    this.walking = walk.catch(() => undefined);
    await walk;
    return this.costs[n - 1];
  }
}

/** One renderer per session file, for the branch and bodies it was made from. */
export class RequestViews {
  private readonly renderers = new Map<string, CachedRenderer>();

  /** What request `n` of the branch at `leafId` sent; bodies left on disk are read back through `bodies`. */
  async render(path: string, data: SessionData, leafId: string | null, n: number, config: RenderConfig, bodies: BodyCache): Promise<RequestView> {
    return (await this.cached(path, data, leafId, config, bodies)).renderer.render(n);
  }

  /** What request `n` of the branch at `leafId` cost and why (undefined past the last one sent). */
  async cost(path: string, data: SessionData, leafId: string | null, n: number, config: RenderConfig, bodies: BodyCache): Promise<RequestCost | undefined> {
    const cached = await this.cached(path, data, leafId, config, bodies);
    cached.costs ??= new CostWalk(cached.entries, config);
    return cached.costs.request(n);
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
