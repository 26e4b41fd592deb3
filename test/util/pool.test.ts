// The generic worker pool (src/util/pool.ts) that the parse, validation and dedup pools
// are built on: jobs go to idle workers, at most `size` at once; a dead worker is replaced
// and its job handed back; the watchdog kills a job that runs too long; a worker that
// cannot run a job is restarted for it; workers that keep dying before they are ready
// break the pool; close drops what is queued. The workers here are timers in this process
// (the pools' own tests run real threads and sandboxed processes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkerPool, type PoolHooks, type PoolWorker } from '../../src/util/pool.js';

interface Job {
  n: number;
  /** ms the job takes; 'die': the worker dies running it */
  ms: number | 'die';
  key?: string;
  resolve(v: string): void;
  reject(e: Error): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class TimerWorker implements PoolWorker<Job> {
  static started = 0;
  readonly id = ++TimerWorker.started;
  timer: NodeJS.Timeout | null = null;
  dead = false;
  constructor(
    private pool: () => WorkerPool<Job, TimerWorker>,
    readonly key: string | null,
    startMs: number | 'fail' | null,
  ) {
    if (startMs === 'fail') setTimeout(() => this.die('failed to start'), 5);
    else if (startMs !== null) setTimeout(() => this.pool().ready(this), startMs);
  }
  run(job: Job): void {
    if (job.ms === 'die') {
      setTimeout(() => this.die('killed by its job'), 5);
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pool().finished(this);
      job.resolve(`${job.n}@${this.id}`);
    }, job.ms);
  }
  kill(): void {
    this.die('killed');
  }
  die(why: string): void {
    if (this.dead) return;
    this.dead = true;
    if (this.timer) clearTimeout(this.timer);
    this.pool().exited(this, new Error(why));
  }
  async close(): Promise<void> {
    this.die('closed');
  }
}

function makePool(
  hooks: Partial<PoolHooks<Job, TimerWorker>>,
  opts: { size: number; maxStartFailures?: number },
  start: (key: string | null) => number | 'fail' | null = () => null,
) {
  let pool!: WorkerPool<Job, TimerWorker>;
  const lost: { n: number; timedOut: boolean; error: string }[] = [];
  const rejected: { n: number; why: string }[] = [];
  pool = new WorkerPool<Job, TimerWorker>(
    {
      spawn: (prev, job) => {
        const key = job?.key ?? prev?.key ?? null;
        return new TimerWorker(() => pool, key, start(key));
      },
      lost: (job, _w, why) => {
        lost.push({ n: job.n, timedOut: why.timedOut, error: why.error.message });
        job.reject(why.error);
      },
      reject: (job, why) => {
        rejected.push({ n: job.n, why });
        job.reject(new Error(why));
      },
      ...hooks,
    },
    { readyOnSpawn: start(null) === null, ...opts },
  );
  const run = (n: number, ms: Job['ms'], key?: string) =>
    new Promise<string>((resolve, reject) => pool.submit({ n, ms, key, resolve, reject }, { grow: true }));
  return { pool, run, lost, rejected };
}

test('jobs go to idle workers, at most size at once; workers start as the queue needs them', async () => {
  const { pool, run } = makePool({}, { size: 2 });
  const out = await Promise.all([1, 2, 3, 4, 5].map((n) => run(n, 20)));
  assert.deepEqual(
    out.map((x) => x.split('@')[0]),
    ['1', '2', '3', '4', '5'],
  );
  assert.equal(pool.workers().length, 2, 'never more workers than the size');
  assert.equal(new Set(out.map((x) => x.split('@')[1])).size, 2, 'both workers took jobs');
  const { pool: small, run: runSmall } = makePool({}, { size: 4 });
  await runSmall(1, 1);
  assert.equal(small.workers().length, 1, 'one job starts one worker');
  await pool.close();
  await small.close();
});

test('a worker that dies is replaced and its job handed back; a retried job runs on the replacement', async () => {
  const { pool, run, lost } = makePool({}, { size: 1 });
  const first = pool.workers();
  await assert.rejects(run(1, 'die'), /killed by its job/);
  assert.deepEqual(lost, [{ n: 1, timedOut: false, error: 'killed by its job' }]);
  assert.notEqual(pool.workers()[0], first[0], 'the dead worker was replaced');
  assert.match(await run(2, 1), /^2@/, 'the replacement takes the next job');
  // requeue: the owner's retry runs before queued work
  const order: number[] = [];
  let retried = false;
  const { pool: p2, run: run2 } = makePool(
    {
      lost: (job) => {
        if (retried) return job.reject(new Error('twice'));
        retried = true;
        p2.requeue({ ...job, ms: 5 });
      },
    },
    { size: 1 },
  );
  await Promise.all([run2(1, 'die').then(() => order.push(1)), run2(2, 5).then(() => order.push(2))]);
  assert.deepEqual(order, [1, 2]);
  await pool.close();
  await p2.close();
});

test('the watchdog kills a worker whose job runs too long; rearm gives the job its time again', async () => {
  const { pool, run, lost } = makePool({ timeoutMs: () => 40 }, { size: 1 });
  await assert.rejects(run(1, 500), /killed/);
  assert.deepEqual(
    lost.map((l) => [l.n, l.timedOut]),
    [[1, true]],
  );
  assert.match(await run(2, 5), /^2@/);
  // a job of 60 ms survives a 40 ms watchdog re-armed after 30 ms
  const p = run(3, 60);
  await sleep(30);
  pool.rearm(pool.workers()[0]);
  assert.match(await p, /^3@/);
  await pool.close();
});

test('a worker is restarted for a job it cannot run, and idle workers take the jobs they can run first', async () => {
  const { pool, run } = makePool(
    { pick: (w, q) => q.findIndex((j) => j.key === w.key), fits: (w, j) => w.key === (j.key ?? null) },
    { size: 1 },
    () => 5,
  );
  pool.warm(1);
  const before = TimerWorker.started;
  const out = await Promise.all([run(1, 5, 'a'), run(2, 5, 'b'), run(3, 5, 'a')]);
  // 'a' needs a restart, the other 'a' job goes next on that worker, then 'b' restarts it
  assert.equal(TimerWorker.started - before, 2);
  assert.equal(out[0].split('@')[1], out[2].split('@')[1]);
  assert.notEqual(out[0].split('@')[1], out[1].split('@')[1]);
  await pool.close();
});

test('workers that keep dying before they are ready break the pool: queued jobs are dropped as broken', async () => {
  const { pool, run, rejected } = makePool({}, { size: 1, maxStartFailures: 3 }, () => 'fail');
  pool.warm(1);
  await assert.rejects(run(1, 5), /broken/);
  assert.equal(pool.broken, true);
  assert.deepEqual(rejected, [{ n: 1, why: 'broken' }]);
  await assert.rejects(run(2, 5), /broken/, 'a broken pool takes no more jobs');
  await pool.close();
});

test('close drops queued jobs and stops the workers', async () => {
  const { pool, run, rejected } = makePool({}, { size: 1 });
  const a = run(1, 30);
  const b = run(2, 30);
  await sleep(5);
  await pool.close();
  await assert.rejects(b, /closed/);
  await assert.rejects(a);
  assert.ok(rejected.some((r) => r.n === 2 && r.why === 'closed'));
  await assert.rejects(run(3, 1), /closed/);
  assert.equal(pool.workers().length, 0);
});
