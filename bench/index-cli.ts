// Cold `nnrag index` as a whole process (issue 27's index target): for each nnrag build
// given (default: this one), `nnrag index --config FILE` on an empty store, several runs,
// the builds alternating run by run (A B, B A, A B, …) so that a change of the machine's
// load falls on both. Prints per build the median wall time (the parent's clock around
// the process), the median CPU time (user + system of the process and its threads, from
// /usr/bin/time), peak RSS, and the load average before each run; then whether the
// stores the builds wrote hold the same facts, files, problems and repository rows (the
// columns that record a time, a run or a duration left out).
//
// usage: node dist/bench/index-cli.js --config FILE [--build DIR …] [--runs N] [--workers N] [--node-arg ARG …] [--json]
//   --build    an nnrag checkout with dist/ built (repeatable; default this checkout)
//   --runs     cold runs per build (default 7; the median is printed)
//   --node-arg an option for node in every run (repeatable), e.g. a V8 flag to compare
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { args, buildDirs, opt, opts } from './args.js';

const config = opt('--config');
if (!config) {
  console.error('usage: node dist/bench/index-cli.js --config FILE [--build DIR …] [--runs N] [--workers N] [--json]');
  process.exit(2);
}
const builds = buildDirs();
const runs = Number(opt('--runs', '7'));
const workers = opt('--workers');
/** extra node options for every run (e.g. a V8 flag to compare) */
const nodeArgs = opts('--node-arg');
const work = mkdtempSync(path.join(tmpdir(), 'nnrag-index-cli-'));

interface Run {
  wall: number;
  cpu: number;
  user: number;
  sys: number;
  rssMB: number;
  load1: number;
}

/** Busy CPU seconds of the whole machine (all processes), from /proc/stat (USER_HZ = 100). */
function machineBusy(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / 100;
  } catch {
    return Number.NaN;
  }
}

/** One cold index of the config by `build` into the empty store `store`. */
function coldIndex(build: string, store: string): Run & { otherLoad: number; files: number; parsed: number } {
  const bin = path.join(build, 'dist', 'src', 'cli', 'bin.js');
  const cmd = [
    '-f',
    '%e %U %S %M',
    process.execPath,
    ...nodeArgs,
    bin,
    'index',
    '--config',
    path.resolve(config!),
    '--store',
    store,
    '--json',
    ...(workers ? ['--workers', workers] : []),
  ];
  const load1 = loadavg()[0];
  const busy0 = machineBusy();
  const t = performance.now();
  const r = spawnSync('/usr/bin/time', cmd, { encoding: 'utf8', maxBuffer: 1 << 28 });
  const wall = (performance.now() - t) / 1000;
  const busy = machineBusy() - busy0;
  if (r.status !== 0) throw new Error(`${bin} index failed (${r.status}): ${r.stderr}`);
  const [, user, sys, rssKB] = (r.stderr.trim().split('\n').pop() ?? '').split(' ').map(Number);
  const report = JSON.parse(r.stdout) as { files: number; parsed: number };
  return {
    wall,
    cpu: user + sys,
    user,
    sys,
    rssMB: Math.round(rssKB / 1024),
    load1,
    // cores' worth of CPU the rest of the machine used meanwhile
    otherLoad: Math.max(0, (busy - user - sys) / wall),
    files: report.files,
    parsed: report.parsed,
  };
}

/** A digest per table of what a store holds, without the columns that record when or
 *  how long (parse_ms, indexed_at, the runs table). */
function storeDigest(store: string): Record<string, string> {
  const db = new Database(path.join(store, 'index.sqlite'), { readonly: true });
  try {
    const queries: Record<string, string> = {
      facts: 'SELECT blob, version, data, size, lines, errors, first_error, encoding, problem FROM facts ORDER BY blob',
      files: 'SELECT repo, path, module, blob, size, mtime_ms FROM files ORDER BY repo, path',
      problems: 'SELECT repo, path, kind, message FROM problems ORDER BY repo, path, kind, message',
      repos: 'SELECT name, url, root, revision, local, priority, package_roots FROM repos ORDER BY name',
      support_files: 'SELECT * FROM support_files ORDER BY repo, path',
    };
    const out: Record<string, string> = {};
    for (const [table, sql] of Object.entries(queries)) {
      const h = createHash('sha256');
      let n = 0;
      for (const row of db.prepare(sql).raw().iterate()) {
        h.update(JSON.stringify(row));
        h.update('\n');
        n++;
      }
      out[table] = `${n} rows ${h.digest('hex').slice(0, 16)}`;
    }
    return out;
  } finally {
    db.close();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const r2 = (x: number) => Math.round(x * 100) / 100;

try {
  const results = builds.map(() => [] as ReturnType<typeof coldIndex>[]);
  const digests: Record<string, string>[] = [];
  for (let i = 0; i < runs; i++) {
    const order = builds.map((_, k) => k);
    if (i % 2) order.reverse();
    for (const k of order) {
      const store = path.join(work, `store-${k}-${i}`);
      const run = coldIndex(builds[k], store);
      results[k].push(run);
      if (i === runs - 1) digests[k] = storeDigest(store);
      rmSync(store, { recursive: true, force: true });
    }
  }
  const summary = builds.map((b, k) => {
    const rs = results[k];
    return {
      build: b,
      runs: rs.length,
      files: rs[0].files,
      parsed: rs[0].parsed,
      medianWall: r2(median(rs.map((r) => r.wall))),
      medianCpu: r2(median(rs.map((r) => r.cpu))),
      medianUser: r2(median(rs.map((r) => r.user))),
      medianSys: r2(median(rs.map((r) => r.sys))),
      medianRssMB: median(rs.map((r) => r.rssMB)),
      load1: rs.map((r) => r2(r.load1)),
      otherLoad: rs.map((r) => r2(r.otherLoad)),
      walls: rs.map((r) => r2(r.wall)),
      cpus: rs.map((r) => r2(r.cpu)),
      store: digests[k],
    };
  });
  const same = summary.every((s) => JSON.stringify(s.store) === JSON.stringify(summary[0].store));
  if (args.includes('--json')) console.log(JSON.stringify({ config, summary, sameStore: same }, null, 2));
  else {
    for (const s of summary) {
      console.log(
        `${s.build}: ${s.files} files, ${s.parsed} parsed; median ${s.medianWall} s wall, ${s.medianCpu} s CPU ` +
          `(user ${s.medianUser}, sys ${s.medianSys}), ${s.medianRssMB} MB peak RSS over ${s.runs} runs`,
      );
      console.log(`  walls ${s.walls.join(' ')}; CPU ${s.cpus.join(' ')}`);
      console.log(`  load average ${s.load1.join(' ')}; other processes' cores ${s.otherLoad.join(' ')}`);
      console.log(`  store ${JSON.stringify(s.store)}`);
    }
    if (builds.length > 1) console.log(same ? 'stores: identical' : 'stores: DIFFER');
  }
  if (!same) process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
