// Repositories as jobs on a real queue (docs/SCALE.md): BullMQ on Redis. `enqueue`
// (`nnrag queue`) adds one job per repository, `queueStatus` (`nnrag queue status`) counts
// them and shows each failed job's error, `runWorker` (`nnrag worker`, any number, on any
// machine that reaches the Redis server) takes jobs and builds each repository's shard
// (commands/shard.ts) in a thread of its own (shard-thread.ts), then `nnrag merge` unions
// the shards.
//
// BullMQ's conventions, not home-made ones:
// - the job id is the repository's name (encoded: BullMQ ids may not hold ':'), so adding a
//   repository that is queued, running or done is a no-op: a repository is never enqueued
//   twice; completed jobs are kept (removeOnComplete by age only) so that stays true;
// - attempts + exponential backoff: a job that throws is retried, then ends `failed` with
//   its error (failedReason), kept for `queue status`;
// - stalled-job detection: a worker renews its job's lock every lockDuration/2; a worker
//   killed with SIGKILL stops renewing, another worker's stalled check (every
//   stalledInterval) puts the job back in the wait list and it runs again from scratch
//   (the killed build left only an unmarked temporary folder, shard.ts);
// - progress: the job's progress is { phase, done, total } as the shard is built.
import path from 'node:path';
import { Worker as Thread } from 'node:worker_threads';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { ConfiguredRepo } from '../config/repos.js';
import { idFileStem } from '../discover/ids.js';
import { UsageError } from '../util/errors.js';
import type { ShardThreadInput, ShardThreadMessage } from './shard-thread.js';
import type { ShardOptions } from './shard.js';

export const DEFAULT_QUEUE = 'nnrag';

/** What a job carries: the repository, its universe, and the pipeline's options that
 *  decide the result (validation, profile, equivalence), the same for every worker. */
export interface RepoJob {
  repo: string;
  universe: ConfiguredRepo[];
  pipeline: { validate: boolean; profile?: 'slim' | 'faithful'; equivalence?: boolean; witnesses?: boolean };
}

export interface JobResult {
  dir: string;
  repo: string;
  blocks: number;
  ok: number;
  timings: Record<string, number>;
  peakRss?: number;
  worker: string;
  attempt: number;
}

/** `redis://[user:password@]host:port[/db]` (rediss: TLS) as ioredis options. */
export function redisOptions(url: string): RedisOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`--redis ${url}: not a URL (redis://host:port)`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new UsageError(`--redis ${url}: expected redis:// or rediss://`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new UsageError(`--redis ${url}: database must be a whole number`);
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db,
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    // BullMQ workers block on Redis; ioredis must not give up on a command (BullMQ's rule)
    maxRetriesPerRequest: null,
  };
}

/** A client for one Queue or Worker (BullMQ under native ESM takes a constructed ioredis
 *  client; it duplicates it for a worker's blocking connection). Closed with `quit`. */
export function redisClient(url: string): Redis {
  return new Redis(redisOptions(url));
}

/** Run `f` with a Queue of its own connection; both closed after. */
async function withQueue<T>(url: string, name: string, f: (q: Queue<RepoJob, JobResult>) => Promise<T>): Promise<T> {
  const conn = redisClient(url);
  const q = new Queue<RepoJob, JobResult>(name, { connection: conn });
  try {
    return await f(q);
  } finally {
    await q.close();
    await conn.quit().catch(() => {});
  }
}

/** The job id of a repository (its name, with `%`, `/`, `:` and `\` percent-encoded). */
export function jobId(repo: string): string {
  return `repo-${idFileStem(repo)}`;
}

export interface EnqueueOptions {
  redis: string;
  queue?: string;
  /** the repositories to queue (each gets a job) */
  repos: ConfiguredRepo[];
  /** the universe each job indexes (default: `repos`) */
  universe?: ConfiguredRepo[];
  pipeline: RepoJob['pipeline'];
  /** tries before a job ends failed (default 3) */
  attempts?: number;
  /** first retry delay, ms, doubled each retry (default 10 s) */
  backoffMs?: number;
}

export interface EnqueueResult {
  queue: string;
  added: string[];
  /** repositories whose job already exists (queued, running, done or failed) */
  existing: { repo: string; state: string }[];
}

/** `nnrag queue`: one job per repository; a repository whose job exists is not added again. */
export async function enqueue(opts: EnqueueOptions): Promise<EnqueueResult> {
  if (!opts.repos.length) throw new UsageError('no repositories to queue: give --config FILE or --repo …');
  const name = opts.queue ?? DEFAULT_QUEUE;
  const universe = opts.universe ?? opts.repos;
  return withQueue(opts.redis, name, async (q) => {
    const added: string[] = [];
    const existing: EnqueueResult['existing'] = [];
    for (const spec of opts.repos) {
      const id = jobId(spec.name);
      const prev = await q.getJob(id);
      if (prev) {
        existing.push({ repo: spec.name, state: await prev.getState() });
        continue;
      }
      await q.add(
        'repo',
        {
          repo: spec.name,
          universe: universe.some((u) => u.name === spec.name) ? universe : [...universe, spec],
          pipeline: opts.pipeline,
        },
        {
          jobId: id,
          attempts: opts.attempts ?? 3,
          backoff: { type: 'exponential', delay: opts.backoffMs ?? 10_000 },
          // kept so that the id keeps a repository from being queued twice; failed ones
          // too, with their error, for `queue status`
          removeOnComplete: { age: 30 * 24 * 3600 },
          removeOnFail: false,
        },
      );
      added.push(spec.name);
    }
    return { queue: name, added, existing };
  });
}

export interface QueueStatus {
  queue: string;
  counts: { waiting: number; active: number; delayed: number; completed: number; failed: number; prioritized: number };
  active: { repo: string; progress: unknown; attempts: number }[];
  failed: { repo: string; attempts: number; error: string }[];
  completed: { repo: string; result: JobResult | null; attempts: number }[];
}

/** `nnrag queue status`: the job counts, each active job's progress, each failed job's error. */
export async function queueStatus(opts: { redis: string; queue?: string }): Promise<QueueStatus> {
  const name = opts.queue ?? DEFAULT_QUEUE;
  return withQueue(opts.redis, name, async (q) => {
    const c = await q.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'completed',
      'failed',
      'prioritized',
      'waiting-children',
    );
    const n = (k: string) => c[k] ?? 0;
    const active = await q.getActive();
    const failed = await q.getFailed();
    const completed = await q.getCompleted();
    return {
      queue: name,
      counts: {
        waiting: n('waiting'),
        active: n('active'),
        delayed: n('delayed'),
        completed: n('completed'),
        failed: n('failed'),
        prioritized: n('prioritized'),
      },
      active: active.map((j) => ({ repo: j.data.repo, progress: j.progress, attempts: j.attemptsMade })),
      failed: failed
        .map((j) => ({ repo: j.data.repo, attempts: j.attemptsMade, error: j.failedReason }))
        .sort((a, b) => (a.repo < b.repo ? -1 : 1)),
      completed: completed
        .map((j) => ({ repo: j.data.repo, result: j.returnvalue ?? null, attempts: j.attemptsMade }))
        .sort((a, b) => (a.repo < b.repo ? -1 : 1)),
    };
  });
}

export interface WorkerOptions {
  redis: string;
  queue?: string;
  /** where shards go (`<shards>/<repo>`); a shared or collected folder */
  shardsDir: string;
  /** the repository cache of this machine (default `<shards>/.repos`) */
  cacheDir?: string;
  /** jobs at once (default 1; each job its own thread and validation pool) */
  concurrency?: number;
  /** ms a job's lock lasts without renewal (BullMQ lockDuration, default 30 s) */
  lockDurationMs?: number;
  /** ms between stalled-job checks (BullMQ stalledInterval, default 30 s) */
  stalledIntervalMs?: number;
  /** stop when no job is waiting, delayed or active (default: run until stopped) */
  exitWhenDrained?: boolean;
  /** the worker's own validation environment (interpreter, root filesystem, sandbox, pool size) */
  pool?: ShardOptions['pool'];
  onEvent?: (e: {
    event: 'active' | 'completed' | 'failed' | 'stalled' | 'warning' | 'error';
    repo?: string;
    attempt?: number;
    detail?: unknown;
  }) => void;
}

/** Build one job's shard in a thread of its own (shard-thread.ts), reporting progress. */
function buildInThread(
  job: Job<RepoJob, JobResult>,
  opts: WorkerOptions,
  onWarning: (m: string) => void,
): Promise<Omit<JobResult, 'worker' | 'attempt'>> {
  const input: ShardThreadInput = {
    shardsDir: opts.shardsDir,
    repo: job.data.repo,
    universe: job.data.universe,
    options: {
      ...job.data.pipeline,
      cacheDir: opts.cacheDir,
      factsCache: opts.cacheDir ? path.join(opts.cacheDir, '.facts') : undefined,
      pool: opts.pool,
    },
  };
  return new Promise((resolve, reject) => {
    const t = new Thread(new URL('./shard-thread.js', import.meta.url), { workerData: input });
    let settled = false;
    let lastProgress = 0;
    t.on('message', (m: ShardThreadMessage) => {
      if (m.kind === 'progress') {
        // progress is a Redis write: at most a few a second
        const now = Date.now();
        if (m.phase !== 'extract' || now - lastProgress > 500 || m.done === m.total) {
          lastProgress = now;
          void job.updateProgress({ phase: m.phase, done: m.done, total: m.total }).catch(() => {});
        }
      } else if (m.kind === 'warning') onWarning(m.message);
      else if (m.kind === 'result') {
        settled = true;
        resolve(m.result);
      } else {
        settled = true;
        const e = new Error(m.message);
        if (m.stack) e.stack = m.stack;
        reject(e);
      }
    });
    t.on('error', (e) => {
      if (!settled) {
        settled = true;
        reject(e);
      }
    });
    t.on('exit', (code) => {
      if (!settled) {
        settled = true;
        reject(new Error(`shard thread exited with code ${code}`));
      }
    });
  });
}

/** `nnrag worker`: take jobs until stopped (SIGINT/SIGTERM: the running jobs finish
 *  first) or, with exitWhenDrained, until the queue has nothing left to do. */
export async function runWorker(opts: WorkerOptions): Promise<{ completed: number; failed: number }> {
  const name = opts.queue ?? DEFAULT_QUEUE;
  const connection = redisClient(opts.redis);
  const shardsDir = path.resolve(opts.shardsDir);
  const ev = opts.onEvent ?? (() => {});
  let completed = 0;
  let failed = 0;
  const worker = new Worker<RepoJob, JobResult>(
    name,
    async (job) => {
      ev({ event: 'active', repo: job.data.repo, attempt: job.attemptsMade + 1 });
      const r = await buildInThread(job, { ...opts, shardsDir }, (m) =>
        ev({ event: 'warning', repo: job.data.repo, detail: m }),
      );
      return { ...r, worker: `${process.pid}`, attempt: job.attemptsMade + 1 };
    },
    {
      connection,
      concurrency: opts.concurrency ?? 1,
      lockDuration: opts.lockDurationMs ?? 30_000,
      stalledInterval: opts.stalledIntervalMs ?? 30_000,
      maxStalledCount: 2,
      autorun: true,
    },
  );
  worker.on('completed', (job, r) => {
    completed++;
    ev({ event: 'completed', repo: job.data.repo, attempt: job.attemptsMade, detail: r });
  });
  worker.on('failed', (job, e) => {
    failed++;
    ev({ event: 'failed', repo: job?.data.repo, attempt: job?.attemptsMade, detail: e.message });
  });
  worker.on('stalled', (id) => ev({ event: 'stalled', detail: id }));
  worker.on('error', (e) => ev({ event: 'error', detail: e.message }));
  await worker.waitUntilReady();
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    if (opts.exitWhenDrained) {
      const q = new Queue(name, { connection: redisClient(opts.redis) });
      let idle = 0;
      const tick = async () => {
        try {
          const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
          idle = Object.values(c).every((v) => !v) ? idle + 1 : 0;
        } catch {
          idle = 0;
        }
        if (idle >= 2) {
          await q.close();
          await (q.opts.connection as Redis).quit().catch(() => {});
          resolve();
        } else setTimeout(() => void tick(), 1000);
      };
      void tick();
    }
  });
  await worker.close();
  await connection.quit().catch(() => {});
  return { completed, failed };
}
