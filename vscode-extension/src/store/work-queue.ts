// The session store's work in flight: operations on one file run one after another (tail reads of
// the same file must not overlap), and settled() waits until nothing is loading, listing or applying.

export class WorkQueue {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly pending = new Set<Promise<unknown>>();

  /** Counts `promise` as work in flight until it settles. */
  track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    promise.finally(() => this.pending.delete(promise)).catch(() => {});
    return promise;
  }

  /** Runs `operation` after every earlier operation on `path` has settled. */
  serial<T>(path: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(path) ?? Promise.resolve();
    const next = previous.then(operation, operation);
    const settledNext = next.catch(() => undefined);
    this.queues.set(path, settledNext);
    settledNext.then(() => {
      if (this.queues.get(path) === settledNext) this.queues.delete(path);
    });
    return this.track(next);
  }

  /** Resolves once no tracked work is in flight, including work started while waiting. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }
}
