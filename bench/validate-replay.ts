// Validation throughput on a real repository's blocks, comparable across builds: the
// validation requests the pipeline sends for a store's blocks are captured once (as JSON),
// then replayed through the ValidatorPool of a build (this one, or another build's dist
// folder given with --lib) in one environment, timed as a whole: pool start, then every
// request at once (as extract --all sends them). Prints validations per second, the
// passes, wall and CPU time (this process; its sandboxes, their workers and candidates)
// and the load average before and after, so an old and a new build can
// be run back to back on the same requests.
//
// usage: node dist/bench/validate-replay.js capture --store S --repos a/b [--limit N] --out REQS.json
//        node dist/bench/validate-replay.js run REQS.json [--lib DIST] [--env DIR | --python PY] [--workers N] [--json OUT]
//        node dist/bench/validate-replay.js alone REQS.json [--every K] [--env DIR | --python PY] [--json OUT]
// alone: every K-th request validated together in one worker, then each in a fresh pool;
// prints how many verdicts (stages and category) are the same and the ones that differ.
// capture extracts the blocks (slim, no witnesses) with a recording validator that runs
// nothing; each block's first request (what a real run validates first) is kept.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ValidationRequest, ValidationResult } from '../src/validate/index.js';
import { args, opt } from './args.js';

const mode = args[0];

/** CPU seconds of the live descendants of this process (the sandboxes, their workers and,
 *  through cutime/cstime, the candidates those reaped), from /proc: a sandbox killed at
 *  close is never waited for by its own parent, so its time would not reach ours. */
function descendantsCpu(): number {
  const parent = new Map<number, number>();
  const time = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const f = readFileSync(`/proc/${e}/stat`, 'utf8').split(') ')[1].split(' ');
      parent.set(Number(e), Number(f[1]));
      time.set(Number(e), (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100);
    } catch {
      /* gone */
    }
  }
  let sum = 0;
  for (const [pid, t] of time) {
    for (let p = parent.get(pid); p; p = parent.get(p)) {
      if (p === process.pid) {
        sum += t;
        break;
      }
    }
  }
  return sum;
}

/** CPU seconds of this process and of its reaped children (/proc/self/stat fields 14-17). */
function cpuSeconds(): { self: number; children: number } {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  const tick = 100; // USER_HZ
  return { self: (Number(f[11]) + Number(f[12])) / tick, children: (Number(f[13]) + Number(f[14])) / tick };
}

if (mode === 'capture') {
  const api = await import('../src/nnrag.js');
  const { extractAndValidate } = await import('../src/pipeline/pipeline.js');
  const { initParser } = await import('../src/parse/parser.js');
  await initParser(); // extraction reads the syntax trees
  const store = opt('--store');
  const out = opt('--out');
  const repos = opt('--repos')?.split(',');
  if (!store || !out || !repos) {
    console.error('usage: validate-replay.js capture --store S --repos a/b [--limit N] --out REQS.json');
    process.exit(2);
  }
  const limit = Number(opt('--limit') ?? 300);
  const ws = api.Workspace.open(store);
  const ids = api
    .discover(ws)
    .filter((b) => repos.includes(b.repo))
    .map((b) => b.id)
    .sort()
    .slice(0, limit);
  const pool = await api.ValidatorPool.start({ workers: 1, python: opt('--python'), env: opt('--env') });
  const seen = new Map<string, ValidationRequest>();
  // a validator that records what it is asked and runs nothing
  const recorder = new Proxy(pool, {
    get(target, prop, recv) {
      if (prop === 'validate')
        return async (req: ValidationRequest): Promise<ValidationResult> => {
          if (!seen.has(req.id)) seen.set(req.id, req);
          const stages = {
            parse: 'fail',
            compile: 'skip',
            import: 'skip',
            namespace: 'skip',
            instantiate: 'skip',
            forward: 'skip',
            equivalence: 'skip',
          } as ValidationResult['stages'];
          return {
            id: req.id,
            ok: false,
            stages,
            timings: {},
            category: 'runtime-error',
            error: 'captured',
            stage: 'parse',
            args: null,
            input_shapes: null,
            output_shapes: null,
            params: null,
            ms: 0,
          } as ValidationResult;
        };
      return Reflect.get(target, prop, recv);
    },
  });
  try {
    await extractAndValidate(ws, ids, {
      validator: recorder,
      force: true,
      witnesses: false,
      out: path.join(store, 'replay-library'),
    });
  } finally {
    await pool.close();
    ws.close();
  }
  writeFileSync(out, JSON.stringify([...seen.values()]));
  console.log(`${seen.size} requests of ${ids.length} blocks -> ${out}`);
} else if (mode === 'run') {
  const file = args[1];
  if (!file || file.startsWith('--')) {
    console.error(
      'usage: validate-replay.js run REQS.json [--lib DIST] [--env DIR | --python PY] [--workers N] [--json OUT]',
    );
    process.exit(2);
  }
  const reqs = JSON.parse(readFileSync(file, 'utf8')) as ValidationRequest[];
  const lib = opt('--lib') ? path.resolve(opt('--lib')!) : path.resolve(import.meta.dirname, '..');
  const { ValidatorPool } = (await import(
    pathToFileURL(path.join(lib, 'src', 'validate', 'index.js')).href
  )) as typeof import('../src/validate/index.js');
  const load0 = loadavg();
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  const pool = await ValidatorPool.start({
    workers: opt('--workers') ? Number(opt('--workers')) : undefined,
    env: opt('--env'),
    python: opt('--python'),
  });
  const started = performance.now();
  const results = await Promise.all(reqs.map((r) => pool.validate(r)));
  const done = performance.now();
  const workersCpu = descendantsCpu();
  await pool.close();
  const cpu1 = cpuSeconds();
  const load1 = loadavg();
  const ok = results.filter((r) => r.ok).length;
  const validateS = (done - started) / 1000;
  const row = {
    lib,
    requests: reqs.length,
    ok,
    crash: results.filter((r) => r.category === 'crash').length,
    timeout: results.filter((r) => r.category === 'timeout').length,
    startS: Math.round(started - t0) / 1000,
    validateS: Math.round(validateS * 1000) / 1000,
    perSecond: Math.round((reqs.length / validateS) * 1000) / 1000,
    cpuSelfS: Math.round((cpu1.self - cpu0.self) * 100) / 100,
    cpuChildrenS: Math.round((cpu1.children - cpu0.children) * 100) / 100,
    cpuWorkersS: Math.round(workersCpu * 100) / 100,
    load: { before: load0.map((x) => Math.round(x * 100) / 100), after: load1.map((x) => Math.round(x * 100) / 100) },
    workers: opt('--workers') ?? 'default',
  };
  console.log(JSON.stringify(row));
  const json = opt('--json');
  if (json)
    writeFileSync(
      json,
      JSON.stringify(
        {
          ...row,
          results: results.map((r) => ({ id: r.id, ok: r.ok, category: r.category, stage: r.stage, ms: r.ms })),
        },
        null,
        1,
      ),
    );
} else if (mode === 'alone') {
  // the same requests validated together in one worker, then each alone in a fresh pool:
  // the verdicts (stages, category) must be the same (issue 24's torch-2 batch crash)
  const file = args[1];
  const reqs = (JSON.parse(readFileSync(file, 'utf8')) as ValidationRequest[]).filter(
    (_r, i) => i % Number(opt('--every') ?? 1) === 0,
  );
  const { ValidatorPool } = await import('../src/validate/index.js');
  const poolOpts = { workers: 1, env: opt('--env'), python: opt('--python') };
  const verdict = (r: ValidationResult) => `${JSON.stringify(r.stages)} ${r.category ?? ''}`;
  const pool = await ValidatorPool.start(poolOpts);
  const together: ValidationResult[] = [];
  for (const r of reqs) together.push(await pool.validate(r));
  await pool.close();
  const differ: { id: string; together: string; alone: string }[] = [];
  for (const [i, r] of reqs.entries()) {
    const p = await ValidatorPool.start(poolOpts);
    const alone = await p.validate(r);
    await p.close();
    if (verdict(alone) !== verdict(together[i]))
      differ.push({ id: r.id, together: verdict(together[i]), alone: verdict(alone) });
  }
  const row = {
    requests: reqs.length,
    environment: together.find((r) => r.environment)?.environment?.label ?? null,
    okTogether: together.filter((r) => r.ok).length,
    crashTogether: together.filter((r) => r.category === 'crash').length,
    same: reqs.length - differ.length,
    differ,
  };
  console.log(JSON.stringify(row));
  const json = opt('--json');
  if (json) writeFileSync(json, JSON.stringify(row, null, 1));
} else {
  console.error('usage: validate-replay.js capture … | run REQS.json … | alone REQS.json …');
  process.exit(2);
}
