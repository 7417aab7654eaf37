// Typing in the search box: the server is asked once the keys stop for a moment, and a
// newer query cancels an older one (its request aborted, its promise settled at once with
// undefined) — so answers never arrive out of order.

export const DEBOUNCE_MS = 200;

interface Pending {
  timer: ReturnType<typeof setTimeout> | undefined;
  abort: AbortController;
  settle: () => void;
}

export class Latest<T> {
  private pending: Pending | undefined;

  constructor(
    private readonly run: (query: string, signal: AbortSignal) => Promise<T>,
    private readonly ms = DEBOUNCE_MS,
  ) {}

  /** `run(query)`'s answer, `ms` after the last call; undefined when a newer call (or cancel) came first. */
  request(query: string): Promise<T | undefined> {
    this.cancel();
    return new Promise<T | undefined>((resolve, reject) => {
      const abort = new AbortController();
      const mine: Pending = { timer: undefined, abort, settle: () => resolve(undefined) };
      this.pending = mine;
      mine.timer = setTimeout(() => {
        mine.timer = undefined;
        this.run(query, abort.signal).then(
          (value) => (abort.signal.aborted ? resolve(undefined) : resolve(value)),
          (error: unknown) =>
            abort.signal.aborted
              ? resolve(undefined)
              : reject(error instanceof Error ? error : new Error(String(error))),
        );
      }, this.ms);
    });
  }

  /** Drops the call waiting or running, if any. */
  cancel(): void {
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return;
    if (pending.timer !== undefined) clearTimeout(pending.timer);
    pending.abort.abort();
    pending.settle();
  }
}
