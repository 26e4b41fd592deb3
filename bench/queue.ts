// The queue against one process (docs/SCALE.md, issue 28): a config's repositories run
// through `nnrag queue` + W `nnrag worker` processes + `nnrag merge`, and through one
// `nnrag extract --all`, alternately (single, queue, single, queue …) on the same machine,
// each from a fresh store. Prints per run the wall time, the CPU time of every process it
// started (user + sys, from /usr/bin/time), their peak RSS, the load average before and
// after, and whether the merged library's files equal the single run's byte for byte, and
// its block records the single run's (but for the fields that measure the run: `file`, the
// store's path; `ms` and `…Ms`, times).
// A real redis-server (Debian's) is started here on a loopback port, with append-only
// persistence, as test/queue/queue.test.ts starts it.
//
//   node dist/bench/queue.js --config CONFIG [--rounds 2] [--workers 2] [--no-validate]
//        [--python PY] [--validation-workers N] [--worker-validation-workers N] [--out DIR]
//   node dist/bench/queue.js --compare SINGLE_STORE MERGED_STORE   (the comparison alone)
// --validation-workers sizes the single run's validation pool (and each worker's, unless
// --worker-validation-workers sizes those): on 2 cores, `--validation-workers 2
// --worker-validation-workers 1` gives both runs two validating interpreters in all.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listExtractions } from '../src/store/records.js';
import { IndexStore } from '../src/store/store.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(here, '..', 'src', 'cli', 'bin.js');
const REDIS = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p));

const args = process.argv.slice(2);
const opt = (k: string) => {
  const i = args.indexOf(k);
  return i >= 0 ? args[i + 1] : undefined;
};
const config = opt('--config');
const rounds = Number(opt('--rounds') ?? 2);
const workers = Number(opt('--workers') ?? 2);
const noValidate = args.includes('--no-validate');
const python = opt('--python');
const vworkers = opt('--validation-workers');
const wvworkers = opt('--worker-validation-workers') ?? vworkers;
const out = opt('--out') ? path.resolve(opt('--out')!) : mkdtempSync(path.join(os.tmpdir(), 'nnrag-bench-queue-'));

const load = () => +os.loadavg()[0].toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Timed {
  wall: number;
  cpu: number;
  rss: number;
  code: number | null;
}

/** Run `nnrag ARGS` under /usr/bin/time; resolves with its wall, CPU (user + sys) and peak RSS. */
function timed(cliArgs: string[], log: string): Promise<Timed> {
  const tf = `${log}.time`;
  const env = { ...process.env, ...(python ? { NNRAG_PYTHON: python } : {}) };
  const t0 = performance.now();
  const p = spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', tf, process.execPath, BIN, ...cliArgs], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr!.on('data', (d) => {
    err += d.toString();
  });
  return new Promise((resolve) =>
    p.once('exit', (code) => {
      const wall = (performance.now() - t0) / 1000;
      const [, u, s, m] = readFileSync(tf, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
      if (code !== 0) console.error(`nnrag ${cliArgs.join(' ')}: exit ${code}\n${err.slice(-2000)}`);
      resolve({ wall, cpu: u + s, rss: Math.round(m / 1024), code });
    }),
  );
}

async function startRedis(dir: string, port: number): Promise<ChildProcess> {
  const proc = spawn(
    REDIS!,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--save',
      '',
      '--daemonize',
      'no',
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.on('connect', () => c.write('PING\r\n'));
      c.on('data', (d) => {
        c.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      c.on('error', () => resolve(false));
    });
    if (ok) return proc;
    await sleep(100);
  }
  throw new Error('redis-server did not answer on its port');
}

/** Every file under `dir`, relative path → bytes. */
function tree(dir: string, rel = ''): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  if (!existsSync(dir)) return m;
  for (const e of readdirSync(path.join(dir, rel))) {
    const r = path.join(rel, e);
    if (statSync(path.join(dir, r)).isDirectory()) for (const [k, v] of tree(dir, r)) m.set(k, v);
    else m.set(r, readFileSync(path.join(dir, r)));
  }
  return m;
}

/** Each block's verdict in a store: id → status (validated, failed …), with the failing
 *  stage's category when there is one. */
function verdicts(dir: string): Map<string, string> {
  const s = IndexStore.open(dir, { create: false });
  try {
    const m = new Map<string, string>();
    for (const e of listExtractions(s)) m.set(e.id, `${e.status}${e.ok ? '' : ' (not ok)'}`);
    return m;
  } finally {
    s.close();
  }
}

/** A record's fields that measure the run, not the block: the library file's path (it names
 *  the store), and times. */
const RUN_FIELDS = (k: string) => k === 'file' || k === 'ms' || k.endsWith('Ms');

/** Each block's record without its run fields, as JSON: id → text. */
function records(dir: string): Map<string, string> {
  const s = IndexStore.open(dir, { create: false });
  try {
    const m = new Map<string, string>();
    for (const e of listExtractions(s))
      m.set(
        e.id,
        JSON.stringify(e.record, (k, v) => (RUN_FIELDS(k) ? undefined : v)),
      );
    return m;
  } finally {
    s.close();
  }
}

/** The paths (a.b[], ids left out) at which two records differ. */
function differingFields(a: unknown, b: unknown, at = '', out = new Set<string>()): Set<string> {
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) out.add(at);
    else
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
        differingFields(
          (a as Record<string, unknown>)[k],
          (b as Record<string, unknown>)[k],
          Array.isArray(a) ? `${at}[]` : `${at}.${k}`,
          out,
        );
  } else if (JSON.stringify(a) !== JSON.stringify(b)) out.add(at);
  return out;
}

const common = [...(noValidate ? ['--no-validate'] : []), ...(vworkers ? ['--workers', vworkers] : [])];

async function single(k: number) {
  const store = path.join(out, `single-${k}`);
  rmSync(store, { recursive: true, force: true });
  const l0 = load();
  const r = await timed(['extract', '--all', '--config', config!, '--store', store, ...common], store);
  return {
    run: 'single',
    round: k,
    wall: +r.wall.toFixed(1),
    cpu: +r.cpu.toFixed(1),
    rssMb: r.rss,
    load: [l0, load()],
    store,
  };
}

async function queued(k: number) {
  const root = path.join(out, `queue-${k}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(path.join(root, 'redis'), { recursive: true });
  const port = 20000 + Math.floor(Math.random() * 20000);
  const redis = await startRedis(path.join(root, 'redis'), port);
  const url = `redis://127.0.0.1:${port}`;
  const shards = path.join(root, 'shards');
  const l0 = load();
  const t0 = performance.now();
  try {
    const q = await timed(
      ['queue', '--config', config!, '--redis', url, ...(noValidate ? ['--no-validate'] : [])],
      path.join(root, 'queue'),
    );
    const ws = await Promise.all(
      Array.from({ length: workers }, (_, w) =>
        timed(
          [
            'worker',
            '--redis',
            url,
            '--shards',
            shards,
            '--exit-when-drained',
            ...(wvworkers ? ['--workers', wvworkers] : []),
          ],
          path.join(root, `worker-${w}`),
        ),
      ),
    );
    const dirs = readdirSync(shards)
      .filter((d) => !d.startsWith('.'))
      .map((d) => path.join(shards, d));
    const merged = path.join(root, 'merged');
    const m = await timed(['merge', ...dirs, '--into', merged], path.join(root, 'merge'));
    const wall = (performance.now() - t0) / 1000;
    const cpu = q.cpu + ws.reduce((a, w) => a + w.cpu, 0) + m.cpu;
    return {
      run: `queue, ${workers} workers`,
      round: k,
      wall: +wall.toFixed(1),
      cpu: +cpu.toFixed(1),
      workers: ws.map((w) => ({ wall: +w.wall.toFixed(1), cpu: +w.cpu.toFixed(1), rssMb: w.rss, code: w.code })),
      merge: { wall: +m.wall.toFixed(1), cpu: +m.cpu.toFixed(1) },
      shards: dirs.length,
      load: [l0, load()],
      store: merged,
    };
  } finally {
    redis.kill('SIGTERM');
  }
}

/** The merged store against the single run's: library files byte for byte, verdicts, and
 *  records without their run fields. */
function compare(single: string, merged: string) {
  const a = tree(path.join(single, 'library'));
  const b = tree(path.join(merged, 'library'));
  const same = [...a].filter(([f, t]) => b.get(f)?.equals(t)).length;
  const va = verdicts(single);
  const vb = verdicts(merged);
  const differ = [...va].filter(([id, v]) => vb.get(id) !== v);
  const ra = records(single);
  const rb = records(merged);
  const recDiffer = [...ra].filter(([id, r]) => rb.get(id) !== r);
  const tally: Record<string, number> = {};
  for (const v of va.values()) tally[v] = (tally[v] ?? 0) + 1;
  return {
    library: { files: a.size, mergedFiles: b.size, identical: same },
    verdicts: {
      single: va.size,
      merged: vb.size,
      same: va.size - differ.length,
      tally,
      differ: differ.slice(0, 20).map(([id, v]) => ({ id, single: v, merged: vb.get(id) ?? null })),
    },
    records: {
      same: ra.size - recDiffer.length,
      differ: recDiffer.slice(0, 20).map(([id, r]) => ({
        id,
        fields: [...differingFields(JSON.parse(r), JSON.parse(rb.get(id) ?? 'null'))].slice(0, 8),
      })),
    },
  };
}

async function main() {
  const pair = args.indexOf('--compare');
  if (pair >= 0) {
    // two stores made before (a single run's and a merged one): the comparison alone
    console.log(JSON.stringify(compare(path.resolve(args[pair + 1]), path.resolve(args[pair + 2]))));
    return;
  }
  if (!config) throw new Error('give --config CONFIG');
  if (!REDIS) throw new Error('redis-server is not installed (scripts/setup.sh installs it)');
  mkdirSync(out, { recursive: true });
  console.log(
    JSON.stringify({
      env: {
        node: process.version,
        cpus: os.availableParallelism?.() ?? os.cpus().length,
        config,
        workers,
        noValidate,
        python: python ?? null,
        validationWorkers: vworkers ?? null,
        workerValidationWorkers: wvworkers ?? null,
        out,
      },
    }),
  );
  const runs: { wall: number; cpu: number; store: string; run: string }[] = [];
  for (let k = 0; k < rounds; k++) {
    const s = await single(k);
    console.log(JSON.stringify(s));
    const q = await queued(k);
    console.log(JSON.stringify({ ...q, ...compare(s.store, q.store) }));
    console.log(
      JSON.stringify({ round: k, ratioWall: +(q.wall / s.wall).toFixed(2), ratioCpu: +(q.cpu / s.cpu).toFixed(2) }),
    );
    runs.push(s, q);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
