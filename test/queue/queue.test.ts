// The queue end to end (src/commands/queue.ts, shard.ts, store/merge.ts): a real
// redis-server started here on a loopback port (append-only persistence), repositories of
// test/fixtures queued with `nnrag queue`, three `nnrag worker` processes, one killed with
// SIGKILL in the middle of its job; the shards merged with `nnrag merge` must equal one
// `nnrag extract --all` of the same config (the library's files byte for byte, the records
// but for timings and file paths), every job done once, none lost; merging twice or in
// another order gives the same store; an unfinished shard is refused. Then Redis is
// restarted on its append-only file and the queue is still there. One run validates for
// real in the sandbox (Debian's /usr/bin/python3 with torch).
// Skips, saying so, only when redis-server is not installed (scripts/setup.sh installs it).
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixture, repoRoot, tempDir } from '../helpers.js';
import { needsSandbox } from '../support/tier.js';
import { queueStatus, type QueueStatus } from '../../src/commands/queue.js';
import { listExtractions } from '../../src/store/records.js';
import { IndexStore } from '../../src/store/store.js';

const BIN = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p)) ?? null;
const PYTHON = '/usr/bin/python3';
const torchHere =
  !needsSandbox() &&
  existsSync(PYTHON) &&
  spawnSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0 &&
  existsSync('/usr/bin/bwrap');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** A redis-server of this test: loopback only, its data (append-only file) in `dir`. */
class RedisServer {
  proc: ChildProcess | null = null;
  constructor(
    readonly dir: string,
    readonly port: number,
  ) {}
  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.proc = spawn(
      REDIS_SERVER!,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 100; i++) {
      if (await this.ping()) return;
      await sleep(100);
    }
    throw new Error('redis-server did not answer on its port');
  }
  ping(): Promise<boolean> {
    return new Promise((resolve) => {
      const c = net.connect(this.port, '127.0.0.1');
      c.on('connect', () => c.write('PING\r\n'));
      c.on('data', (d) => {
        c.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      c.on('error', () => resolve(false));
    });
  }
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cli(args: string[], env: NodeJS.ProcessEnv = {}): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 << 20,
  });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

interface WorkerProc {
  proc: ChildProcess;
  events: { pid: number; event: string; repo?: string; detail?: unknown }[];
  exited: Promise<number | null>;
}

function startWorker(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  onEvent?: (w: WorkerProc, e: WorkerProc['events'][0]) => void,
): WorkerProc {
  const proc = spawn(process.execPath, [BIN, 'worker', '--json', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const w: WorkerProc = { proc, events: [], exited: new Promise((r) => proc.once('exit', (code) => r(code))) };
  let buf = '';
  proc.stdout!.on('data', (d) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.startsWith('{')) continue;
      const e = JSON.parse(line);
      w.events.push(e);
      onEvent?.(w, e);
    }
  });
  proc.stderr!.on('data', () => {});
  return w;
}

async function waitFor(f: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return;
    await sleep(300);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Every file under `dir`, relative path → bytes. */
function tree(dir: string, rel = ''): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (!existsSync(path.join(dir, rel))) return out;
  for (const f of readdirSync(path.join(dir, rel)).sort()) {
    const r = path.join(rel, f);
    if (statSync(path.join(dir, r)).isDirectory()) for (const [k, v] of tree(dir, r)) out.set(k, v);
    else out.set(r, readFileSync(path.join(dir, r)));
  }
  return out;
}

/** A record without what differs between two runs of the same work: timings (`ms`, `…Ms`)
 *  and the path of the file written (each store has its own library folder). */
function normal(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normal);
  if (v && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (k !== 'ms' && !k.endsWith('Ms') && k !== 'file') o[k] = normal(x);
    return o;
  }
  return v;
}

/** What a store holds that the merge must reproduce: repositories, files, blocks, records. */
function storeView(dir: string) {
  const s = IndexStore.open(dir, { create: false });
  try {
    return {
      repos: s.listRepos().map(({ indexedAt: _i, ...r }) => r),
      files: s.listFiles(),
      blocks: s.listBlocks().sort((a, b) => (a.id < b.id ? -1 : 1)),
      records: listExtractions(s).map((e) => ({
        id: e.id,
        hash: e.hash,
        ok: e.ok,
        status: e.status,
        lines: e.lines,
        text: e.text,
        record: normal(e.record),
      })),
    };
  } finally {
    s.close();
  }
}

function writeConfig(file: string, repos: Record<string, { dir: string; priority: number }>): void {
  const cfg: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(repos)) cfg[name] = { path: r.dir, priority: r.priority };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

function shardDirs(shards: string): string[] {
  return readdirSync(shards)
    .filter((f) => !f.startsWith('.'))
    .map((f) => path.join(shards, f));
}

describe('queue, workers and merge on a real Redis', {
  skip: REDIS_SERVER ? false : 'redis-server is not installed (scripts/setup.sh installs it)',
}, () => {
  let redis: RedisServer;
  let root: string;
  const FOUR = {
    'org/alpha': { dir: fixture('universes', 'alpha'), priority: 2 },
    'org/beta': { dir: fixture('universes', 'beta'), priority: 1 },
    'org/gamma': { dir: fixture('universes', 'gamma'), priority: 3 },
    'org/good': { dir: fixture('validate', 'good'), priority: 4 },
  };

  before(async () => {
    root = tempDir('nnrag-queue-');
    mkdirSync(path.join(root, 'redis'));
    redis = new RedisServer(path.join(root, 'redis'), await freePort());
    await redis.start();
  });
  after(async () => {
    await redis?.stop();
  });

  test('three workers, one killed with SIGKILL mid-job: the merged library equals one extract --all, every job done once', async () => {
    const cfg = path.join(root, 'four.json');
    writeConfig(cfg, FOUR);
    const ref = cli([
      'extract',
      '--all',
      '--config',
      cfg,
      '--store',
      path.join(root, 'ref'),
      '--no-validate',
      '--json',
    ]);
    assert.equal(ref.status, 0, ref.stderr);

    const q = cli(['queue', '--config', cfg, '--redis', redis.url, '--no-validate', '--json']);
    assert.equal(q.status, 0, q.stderr);
    assert.deepEqual(JSON.parse(q.stdout).added.sort(), Object.keys(FOUR).sort());
    // a repository is never queued twice: the same config again adds nothing
    const again = JSON.parse(cli(['queue', '--config', cfg, '--redis', redis.url, '--no-validate', '--json']).stdout);
    assert.deepEqual(again.added, []);
    assert.equal(again.existing.length, 4);

    const shards = path.join(root, 'shards');
    // short locks so the killed worker's job is found stalled within seconds
    const args = ['--redis', redis.url, '--shards', shards, '--lock-duration', '2', '--stalled-interval', '1'];
    let killed: { pid: number; repo: string } | null = null;
    const kill = (w: WorkerProc, e: WorkerProc['events'][0]) => {
      if (!killed && e.event === 'active' && e.repo) {
        killed = { pid: w.proc.pid!, repo: e.repo };
        w.proc.kill('SIGKILL');
      }
    };
    const workers = [startWorker(args, {}, kill), startWorker(args, {}, kill), startWorker(args, {}, kill)];
    let status: QueueStatus | null = null;
    try {
      await waitFor(
        async () => (status = await queueStatus({ redis: redis.url })).counts.completed + status.counts.failed === 4,
        180_000,
        'four finished jobs',
      );
    } finally {
      for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill('SIGTERM');
      await Promise.all(workers.map((w) => w.exited));
    }
    assert.ok(killed, 'a worker was killed');
    const k = killed as { pid: number; repo: string };
    const st = status as unknown as QueueStatus;
    assert.deepEqual({ ...st.counts }, { waiting: 0, active: 0, delayed: 0, completed: 4, failed: 0, prioritized: 0 });
    // every repository completed exactly once, by a worker that lived
    const completions = workers.flatMap((w) => w.events.filter((e) => e.event === 'completed').map((e) => e.repo!));
    assert.deepEqual(completions.sort(), Object.keys(FOUR).sort());
    const killedWorker = workers.find((w) => w.proc.pid === k.pid)!;
    assert.ok(!killedWorker.events.some((e) => e.event === 'completed'), 'the killed worker completed nothing');
    const redone = st.completed.find((c) => c.repo === k.repo)!;
    assert.notEqual(redone.result?.worker, String(k.pid), `${k.repo} was finished by another worker`);

    // the shards, merged, are the single-process run
    const dirs = shardDirs(shards);
    assert.equal(dirs.length, 4);
    const merged = path.join(root, 'merged');
    const m = cli(['merge', ...dirs, '--into', merged, '--json']);
    assert.equal(m.status, 0, m.stderr);
    const want = storeView(path.join(root, 'ref'));
    const got = storeView(merged);
    assert.ok(want.records.length > 20, `the fixtures give blocks (${want.records.length})`);
    assert.deepEqual(got.records, want.records);
    assert.deepEqual(got.blocks, want.blocks);
    assert.deepEqual(got.files, want.files);
    assert.deepEqual(got.repos, want.repos);
    assert.deepEqual(tree(path.join(merged, 'library')), tree(path.join(root, 'ref', 'library')));

    // idempotent and order-free: merging again, and in the reverse order elsewhere
    assert.equal(cli(['merge', ...dirs, '--into', merged]).status, 0);
    const reversed = path.join(root, 'merged-reversed');
    for (const d of [...dirs].reverse()) assert.equal(cli(['merge', d, '--into', reversed]).status, 0);
    assert.deepEqual(storeView(merged), got);
    assert.deepEqual(storeView(reversed), got);
    assert.deepEqual(tree(path.join(reversed, 'library')), tree(path.join(merged, 'library')));

    // nothing unfinished is merged: the killed build's folder (when it got that far) and
    // any store without the completion mark are refused
    const leftovers = readdirSync(shards).filter((f) => f.startsWith('.tmp-'));
    const unfinished = path.join(root, 'unfinished');
    assert.equal(cli(['index', '--repo', FOUR['org/gamma'].dir, '--store', unfinished]).status, 0);
    for (const d of [unfinished, ...leftovers.map((f) => path.join(shards, f))]) {
      const r = cli(['merge', d, '--into', path.join(root, 'never')]);
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /not a finished shard|not an nnrag store/);
    }
  });

  test('a Redis restart on its append-only file keeps the queue: waiting jobs, finished ones, and their ids', async () => {
    const cfg = path.join(root, 'two.json');
    writeConfig(cfg, { 'org/alpha': FOUR['org/alpha'], 'org/gamma': FOUR['org/gamma'] });
    assert.equal(cli(['queue', '--config', cfg, '--redis', redis.url, '--queue', 'later', '--no-validate']).status, 0);
    const before = await queueStatus({ redis: redis.url, queue: 'later' });
    assert.equal(before.counts.waiting, 2);
    await redis.stop();
    assert.equal(await redis.ping(), false);
    await redis.start();
    const afterRestart = await queueStatus({ redis: redis.url, queue: 'later' });
    assert.equal(afterRestart.counts.waiting, 2);
    // the first test's finished jobs are there too, and still keep their repositories from being queued again
    const done = await queueStatus({ redis: redis.url });
    assert.equal(done.counts.completed, 4);
    const w = startWorker([
      '--redis',
      redis.url,
      '--queue',
      'later',
      '--shards',
      path.join(root, 'later'),
      '--exit-when-drained',
    ]);
    assert.equal(await w.exited, 0);
    const end = await queueStatus({ redis: redis.url, queue: 'later' });
    assert.equal(end.counts.completed, 2);
    assert.equal(shardDirs(path.join(root, 'later')).length, 2);
  });

  test('a job that keeps failing ends failed after its attempts, with its error in queue status', async () => {
    // a repository that is there when it is queued and gone when a worker takes it
    const gone = path.join(root, 'gone-repo');
    mkdirSync(gone);
    writeFileSync(path.join(gone, 'm.py'), 'import torch.nn as nn\n\nclass M(nn.Module):\n    pass\n');
    const q = cli([
      'queue',
      '--repo',
      gone,
      '--redis',
      redis.url,
      '--queue',
      'doomed',
      '--attempts',
      '2',
      '--backoff',
      '0',
      '--no-validate',
      '--json',
    ]);
    assert.equal(q.status, 0, q.stderr);
    rmSync(gone, { recursive: true, force: true });
    const w = startWorker([
      '--redis',
      redis.url,
      '--queue',
      'doomed',
      '--shards',
      path.join(root, 'doomed'),
      '--exit-when-drained',
    ]);
    assert.equal(await w.exited, 0);
    assert.equal(w.events.filter((e) => e.event === 'failed').length, 2, 'two attempts, both failed');
    const st = cli(['queue', 'status', '--redis', redis.url, '--queue', 'doomed', '--json']);
    assert.equal(st.status, 1, 'queue status exits 1 when a job failed');
    const s = JSON.parse(st.stdout) as QueueStatus;
    assert.equal(s.counts.failed, 1);
    assert.equal(s.counts.completed, 0);
    assert.equal(s.failed[0].attempts, 2);
    assert.match(s.failed[0].error, /gone-repo/);
    assert.deepEqual(
      existsSync(path.join(root, 'doomed')) ? shardDirs(path.join(root, 'doomed')) : [],
      [],
      'no shard from a failed job',
    );
  });

  test('validated in the sandbox: two workers give the records and files of one validating extract --all', {
    skip: torchHere ? false : 'needs /usr/bin/python3 with torch and bubblewrap',
  }, async () => {
    const cfg = path.join(root, 'val.json');
    writeConfig(cfg, { 'org/alpha': FOUR['org/alpha'], 'org/beta': FOUR['org/beta'], 'org/gamma': FOUR['org/gamma'] });
    const env = { NNRAG_PYTHON: PYTHON };
    const ref = cli(
      ['extract', '--all', '--config', cfg, '--store', path.join(root, 'vref'), '--workers', '1', '--json'],
      env,
    );
    assert.equal(ref.status, 0, ref.stderr);
    assert.equal(cli(['queue', '--config', cfg, '--redis', redis.url, '--queue', 'val']).status, 0);
    const shards = path.join(root, 'vshards');
    const args = ['--redis', redis.url, '--queue', 'val', '--shards', shards, '--workers', '1', '--exit-when-drained'];
    const ws = [startWorker(args, env), startWorker(args, env)];
    assert.deepEqual(await Promise.all(ws.map((w) => w.exited)), [0, 0]);
    const st = await queueStatus({ redis: redis.url, queue: 'val' });
    assert.equal(st.counts.completed, 3, JSON.stringify(st.failed));
    const merged = path.join(root, 'vmerged');
    assert.equal(cli(['merge', ...shardDirs(shards), '--into', merged]).status, 0);
    const want = storeView(path.join(root, 'vref'));
    const got = storeView(merged);
    assert.ok(
      want.records.every((r) => r.status === 'validated'),
      'the reference run validated every block',
    );
    assert.deepEqual(got.records, want.records);
    assert.deepEqual(tree(path.join(merged, 'library')), tree(path.join(root, 'vref', 'library')));
  });
});
