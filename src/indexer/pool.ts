// Pool of parse workers (worker_threads, one tree-sitter parser each; default size
// os.availableParallelism()), on the generic pool of util/pool.ts (queue, idle workers,
// watchdog, replacement). `parse(items)` sends a batch of files to the next idle
// worker and resolves with one ParseOutcome per file. A file the binder throws on
// comes back with a `binder-error` problem; a worker that dies (wasm abort, OOM) is
// replaced, the files of its batch are retried one by one, and the file that kills a
// worker on its own gets a `parse-crash` problem. Nothing here is fatal to the run.
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { WorkerPool, type PoolWorker } from '../util/pool.js';

export interface ParseItem {
  /** absolute path; the worker reads the file itself */
  path: string;
  /** blob id the main thread saw (the worker reports the one it actually read) */
  blob: string | null;
}

export interface ParseOutcome {
  path: string;
  /** git blob id of the bytes that were parsed */
  blob: string;
  /** JSON.stringify(FileFacts), null when the binder failed or the file was unreadable */
  json: string | null;
  lines: number;
  /** number of syntax errors */
  errors: number;
  /** 'line L:C: message' of the first syntax error */
  firstError?: string | null;
  parseMs: number;
  size: number;
  encoding: string | null;
  problem: { kind: string; message: string } | null;
  /** the file could not be read at all (vanished, permission) */
  readFailed?: boolean;
}

export interface WorkerRequest {
  id: number;
  items: ParseItem[];
}

export interface WorkerResponse {
  id: number;
  results: ParseOutcome[];
  fatal?: string;
  /** ms from the worker's start to a ready parser (first response only) */
  initMs?: number;
  /** ms spent on this batch */
  busyMs: number;
  /** V8 heap of the worker after the batch (MB) */
  heapMB?: number;
}

interface Job {
  items: ParseItem[];
  /** retried alone after a worker crash */
  isolated: boolean;
  /** already retried in a worker without heap limits */
  unlimited?: boolean;
  resolve(r: ParseOutcome[]): void;
  reject(e: Error): void;
}

/** A parse worker thread as the generic pool (util/pool.ts) drives it. */
interface ParseWorker extends PoolWorker<Job> {
  thread: Worker;
}

export interface PoolOptions {
  /** V8 old-generation limit per worker in MB (default 128); 0 for none */
  oldMB?: number;
  youngMB?: number;
  /** a batch running longer than this is abandoned and its files retried one by one
   *  (default 120 s); a single file that runs this long gets a `parse-crash` problem */
  timeoutMs?: number;
}

const WORKER_URL = new URL('./worker.js', import.meta.url);

export class ParsePool {
  readonly size: number;
  private pool: WorkerPool<Job, ParseWorker>;
  private nextId = 1;
  /** files parsed, for tests and reports */
  parsedFiles = 0;
  /** per worker: ms from its start to a ready parser */
  readonly initMs: number[] = [];
  /** total ms the workers spent on batches */
  busyMs = 0;
  /** largest V8 heap a worker reported (MB) */
  peakWorkerHeapMB = 0;

  private readonly limits: { oldMB?: number; youngMB?: number };
  private readonly timeoutMs: number;

  /** Heap limits: V8 old generation 128 MB per worker by default, which makes V8
   *  collect garbage sooner (peak RSS indexing torch+torchvision 320 → 250 MB); a file
   *  that needs more is parsed again in a worker without limits. */
  constructor(size?: number, opts: PoolOptions = {}) {
    this.size = Math.max(1, size ?? os.availableParallelism());
    this.limits = { oldMB: opts.oldMB ?? 128, youngMB: opts.youngMB };
    this.timeoutMs = opts.timeoutMs ?? 120_000;
    this.pool = new WorkerPool<Job, ParseWorker>(
      {
        spawn: () => this.spawn(),
        lost: (job, _w, why) =>
          this.retry(job, why.timedOut ? new Error(`parsing took longer than ${this.timeoutMs / 1000} s`) : why.error),
        reject: (job) => job.reject(new Error('ParsePool closed')),
        timeoutMs: () => this.timeoutMs,
        // keep the process alive while work is pending
        busy: (w, busy) => (busy ? w.thread.ref() : w.thread.unref()),
      },
      { size: this.size, readyOnSpawn: true, unrefTimers: true },
    );
  }

  /** Start up to `n` workers now (they initialise tree-sitter in the background). */
  warm(n = this.size): void {
    if (this.pool.closed) throw new Error('ParsePool is closed');
    this.pool.warm(n);
  }

  /** Parse a batch of files on the next idle worker. Workers are started as the queue
   *  needs them, so a small update does not pay for starting every worker. */
  parse(items: ParseItem[]): Promise<ParseOutcome[]> {
    if (!items.length) return Promise.resolve([]);
    return new Promise((resolve, reject) =>
      this.pool.submit({ items, isolated: false, resolve, reject }, { grow: true }),
    );
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private spawn(): ParseWorker {
    const thread = new Worker(WORKER_URL, {
      resourceLimits: {
        ...(this.limits.oldMB ? { maxOldGenerationSizeMb: this.limits.oldMB } : {}),
        ...(this.limits.youngMB ? { maxYoungGenerationSizeMb: this.limits.youngMB } : {}),
      },
    });
    const w: ParseWorker = {
      thread,
      run: (job) => {
        const req: WorkerRequest = { id: this.nextId++, items: job.items };
        thread.postMessage(req);
      },
      kill: () => void thread.terminate(),
      close: async () => {
        await thread.terminate();
      },
    };
    thread.on('message', (res: WorkerResponse) => {
      const job = this.pool.finished(w);
      if (res.initMs !== undefined) this.initMs.push(res.initMs);
      this.busyMs += res.busyMs;
      if (res.heapMB !== undefined) this.peakWorkerHeapMB = Math.max(this.peakWorkerHeapMB, res.heapMB);
      if (job) {
        if (res.fatal) job.reject(new Error(res.fatal));
        else {
          this.parsedFiles += res.results.length;
          job.resolve(res.results);
        }
      }
    });
    thread.on('error', (err) => this.pool.exited(w, err));
    thread.on('exit', (code) => this.pool.exited(w, new Error(`parse worker exited with code ${code}`)));
    thread.unref();
    return w;
  }

  /** Split a crashed batch into single-file jobs; a single file that crashed again
   *  is reported as a problem. */
  private retry(job: Job, err: Error): void {
    if (job.isolated || job.items.length === 1) {
      const it = job.items[0];
      if (/memory limit|out of memory/i.test(err.message) && this.hasLimits && !job.unlimited) {
        // A huge file outgrew the heap limit: parse it alone in a worker without one.
        this.runUnlimited(it).then(
          (r) => job.resolve(r),
          (e: Error) => this.retry({ ...job, unlimited: true }, e),
        );
        return;
      }
      job.resolve([
        {
          path: it.path,
          blob: it.blob ?? '',
          json: null,
          lines: 0,
          errors: 0,
          parseMs: 0,
          size: 0,
          encoding: null,
          problem: { kind: 'parse-crash', message: err.message },
          readFailed: !it.blob,
        },
      ]);
      return;
    }
    const parts = job.items.map(
      (it) =>
        new Promise<ParseOutcome[]>((resolve, reject) => {
          this.pool.requeue({ items: [it], isolated: true, resolve, reject });
        }),
    );
    Promise.all(parts).then((rs) => job.resolve(rs.flat()), job.reject);
  }

  private get hasLimits(): boolean {
    return !!(this.limits.oldMB || this.limits.youngMB);
  }

  /** Parse one file in a one-off worker without heap limits. */
  private runUnlimited(it: ParseItem): Promise<ParseOutcome[]> {
    return new Promise((resolve, reject) => {
      const w = new Worker(WORKER_URL);
      const done = (f: () => void) => {
        w.removeAllListeners();
        void w.terminate();
        f();
      };
      w.on('message', (res: WorkerResponse) =>
        done(() => {
          this.parsedFiles += res.results.length;
          if (res.fatal) reject(new Error(res.fatal));
          else resolve(res.results);
        }),
      );
      w.on('error', (e) => done(() => reject(e)));
      w.on('exit', (code) => done(() => reject(new Error(`parse worker exited with code ${code}`))));
      const req: WorkerRequest = { id: this.nextId++, items: [it] };
      w.postMessage(req);
    });
  }
}
