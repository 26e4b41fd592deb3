// One worker pool for every pool of nnrag (the parse workers, src/indexer/pool.ts; the
// sandboxed validation workers, src/validate/pool.ts; the dedup threads,
// src/library/dedup.ts). What they share lives here: a queue of jobs handed to idle
// workers (a worker may prefer some queued jobs, or be restarted for a job it cannot run),
// a watchdog per job that kills a worker running one too long, a worker that dies replaced
// and its unfinished job handed back to the owner (who retries, requeues or reports it),
// workers started all at once or as the queue needs them, and a pool that gives up after
// workers keep dying before they are ready. What a job is, how it reaches a worker and
// what a failure means stay with the owner (its hooks).

/** A worker as the pool sees it. */
export interface PoolWorker<J> {
  /** Hand one job to the worker (it is ready and has no job). */
  run(job: J): void;
  /** Kill it now (its job ran too long); it reports its end through `WorkerPool.exited`. */
  kill(): void;
  /** Stop it (the pool is closing, or it is being replaced); resolves when it is gone. */
  close(): Promise<void>;
  /** false when it has ended without the pool having heard yet (default true) */
  alive?(): boolean;
}

export interface PoolHooks<J, W extends PoolWorker<J>> {
  /** Start a worker. `prev`: the worker it replaces (dead, or restarted for `job`);
   *  `job`: the job it is started for, run as soon as it is ready. */
  spawn(prev: W | null, job: J | null): W;
  /** A worker ended while running `job`: retry, requeue or settle it. `timedOut`: the
   *  watchdog killed it. Called once the replacement worker is in place. */
  lost(job: J, worker: W, why: { error: Error; timedOut: boolean }): void;
  /** A job the pool drops unrun: it is closing, or broken (workers keep failing to start). */
  reject(job: J, why: 'closed' | 'broken'): void;
  /** Index in the queue of the job this idle worker takes next (default 0, the head). */
  pick?(worker: W, queue: readonly J[]): number;
  /** Whether this worker can run the job; if not, it is replaced by `spawn(worker, job)`. */
  fits?(worker: W, job: J): boolean;
  /** Milliseconds the job may run before its worker is killed; undefined: no limit. */
  timeoutMs?(job: J): number | undefined;
  /** The worker took a job (true) or has none any more (false). */
  busy?(worker: W, busy: boolean): void;
}

export interface WorkerPoolOptions {
  /** most workers at once */
  size: number;
  /** workers take jobs as soon as they are spawned (threads queue messages); otherwise
   *  the owner calls `ready(worker)` (a process that first reports it is ready) */
  readyOnSpawn?: boolean;
  /** give up after this many workers in a row died before they were ready (default: never) */
  maxStartFailures?: number;
  /** watchdog timers do not keep the process alive */
  unrefTimers?: boolean;
}

interface Slot<J, W> {
  worker: W;
  ready: boolean;
  job: J | null;
  /** the job this worker was (re)started for */
  pending: J | null;
  timer: NodeJS.Timeout | null;
  timedOut: boolean;
}

export class WorkerPool<J, W extends PoolWorker<J>> {
  readonly size: number;
  private slots: Slot<J, W>[] = [];
  private queue: J[] = [];
  private closing = false;
  private startFailures = 0;
  /** set when workers keep failing to start: every job is dropped as 'broken' */
  broken = false;

  constructor(
    private readonly hooks: PoolHooks<J, W>,
    private readonly opts: WorkerPoolOptions,
  ) {
    this.size = Math.max(1, opts.size);
  }

  /** The current workers, in slot order. */
  workers(): W[] {
    return this.slots.map((s) => s.worker);
  }

  get closed(): boolean {
    return this.closing;
  }

  /** Start workers until there are `n` (at most the size). */
  warm(n = this.size): W[] {
    if (this.closing) throw new Error('the pool is closed');
    while (this.slots.length < Math.min(n, this.size)) this.slots.push(this.slot(this.hooks.spawn(null, null), null));
    return this.workers();
  }

  /** Queue a job. With `grow`, workers are started as the queue needs them (a small
   *  batch does not pay for starting every worker). */
  submit(job: J, opts: { grow?: boolean } = {}): void {
    if (this.closing || this.broken) {
      this.hooks.reject(job, this.closing ? 'closed' : 'broken');
      return;
    }
    this.queue.push(job);
    if (opts.grow) {
      const idle = this.slots.filter((s) => !s.job && !s.pending).length;
      if (this.queue.length > idle) this.warm(this.slots.length + (this.queue.length - idle));
    }
    this.dispatch();
  }

  /** Put a job back at the head of the queue (a retry runs before new work). */
  requeue(job: J): void {
    if (this.closing || this.broken) {
      this.hooks.reject(job, this.closing ? 'closed' : 'broken');
      return;
    }
    this.queue.unshift(job);
    queueMicrotask(() => this.dispatch());
  }

  /** The worker is ready for jobs (after `spawn`, unless `readyOnSpawn`). */
  ready(worker: W): void {
    const slot = this.slotOf(worker);
    if (!slot || slot.ready) return;
    slot.ready = true;
    this.startFailures = 0;
    if (slot.pending !== null && !this.closing) {
      const job = slot.pending;
      slot.pending = null;
      this.runOn(slot, job);
    }
    this.dispatch();
  }

  /** The worker finished its job: returns it (for the owner to settle) and hands the
   *  worker the next one. */
  finished(worker: W): J | null {
    const slot = this.slotOf(worker);
    if (!slot) return null;
    const job = slot.job;
    this.clear(slot);
    queueMicrotask(() => this.dispatch());
    return job;
  }

  /** (Re)start the watchdog of the worker's job, with the job's full time again (a
   *  stage with a budget of its own). */
  rearm(worker: W): void {
    const slot = this.slotOf(worker);
    if (slot?.job !== null && slot?.job !== undefined) this.arm(slot, slot.job);
  }

  /** The worker ended (exited, crashed, killed). It is replaced; its unfinished job goes
   *  to `hooks.lost`. */
  exited(worker: W, error: Error): void {
    const i = this.slots.findIndex((s) => s.worker === worker);
    if (i < 0) return; // already replaced, or the pool closed
    const slot = this.slots[i];
    const job = slot.job;
    const timedOut = slot.timedOut;
    if (slot.timer) clearTimeout(slot.timer);
    if (this.closing) {
      this.slots.splice(i, 1);
    } else {
      if (!slot.ready) this.startFailures++;
      if (this.opts.maxStartFailures !== undefined && this.startFailures >= this.opts.maxStartFailures) {
        this.broken = true;
        const dropped = [...this.queue, ...this.slots.flatMap((s) => (s.pending !== null ? [s.pending] : []))];
        this.queue = [];
        for (const s of this.slots) s.pending = null;
        for (const j of dropped) this.hooks.reject(j, 'broken');
      } else {
        this.slots[i] = this.slot(this.hooks.spawn(worker, slot.pending), slot.pending);
      }
    }
    if (job !== null) {
      this.hooks.busy?.(worker, false);
      this.hooks.lost(job, worker, { error, timedOut });
    }
    this.dispatch();
  }

  /** Stop every worker; queued jobs (and jobs waiting for a restarted worker) are dropped. */
  async close(): Promise<void> {
    this.closing = true;
    const dropped = [...this.queue, ...this.slots.flatMap((s) => (s.pending !== null ? [s.pending] : []))];
    this.queue = [];
    for (const s of this.slots) {
      s.pending = null;
      if (s.timer) clearTimeout(s.timer);
    }
    for (const j of dropped) this.hooks.reject(j, 'closed');
    await Promise.all(this.slots.map((s) => s.worker.close()));
  }

  /** Hand queued jobs to idle workers. */
  dispatch(): void {
    if (this.closing) return;
    for (const slot of [...this.slots]) {
      if (!this.queue.length) return;
      if (!slot.ready || slot.job !== null || slot.pending !== null || slot.worker.alive?.() === false) continue;
      const k = this.hooks.pick?.(slot.worker, this.queue) ?? 0;
      const job = this.queue.splice(k >= 0 && k < this.queue.length ? k : 0, 1)[0];
      if (this.hooks.fits && !this.hooks.fits(slot.worker, job)) {
        this.restart(slot, job);
        continue;
      }
      this.runOn(slot, job);
    }
  }

  private slot(worker: W, pending: J | null): Slot<J, W> {
    return { worker, ready: !!this.opts.readyOnSpawn, job: null, pending, timer: null, timedOut: false };
  }

  private slotOf(worker: W): Slot<J, W> | undefined {
    return this.slots.find((s) => s.worker === worker);
  }

  /** Replace a worker that cannot run `job` by one started for it. */
  private restart(slot: Slot<J, W>, job: J): void {
    const old = slot.worker;
    const i = this.slots.indexOf(slot);
    this.slots[i] = this.slot(this.hooks.spawn(old, job), job);
    void old.close();
  }

  private runOn(slot: Slot<J, W>, job: J): void {
    slot.job = job;
    slot.timedOut = false;
    this.arm(slot, job);
    this.hooks.busy?.(slot.worker, true);
    slot.worker.run(job);
  }

  private arm(slot: Slot<J, W>, job: J): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    const ms = this.hooks.timeoutMs?.(job);
    if (ms === undefined) return;
    slot.timer = setTimeout(() => {
      if (slot.job !== job) return;
      slot.timedOut = true;
      slot.worker.kill();
    }, ms);
    if (this.opts.unrefTimers) slot.timer.unref();
  }

  private clear(slot: Slot<J, W>): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    const had = slot.job !== null;
    slot.job = null;
    slot.timedOut = false;
    if (had) this.hooks.busy?.(slot.worker, false);
  }
}
