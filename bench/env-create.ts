// Times of `nnrag env create`, whole processes (issue: PyPI validation environments):
//   second  a new environment with torch and the tools only (no store), beside or under
//           nnrag's home next to an existing environment of the same interpreter and torch:
//           what sharing uv's cache and the bytecode (src/environment/bytecode.ts) costs;
//   warm    a new environment for a store (--store) from a warm uv cache and wheel cache;
//   again   `env create` of that same folder once more (the lock up to date).
// Each run is timed with /usr/bin/time (wall, and the CPU of the process and every child it
// waited for: uv, compileall, builds), beside the load average before and after; the
// manifest says per group how the bytecode was made (shared, compiled) and the log what
// was downloaded and built.
//
// usage: node dist/bench/env-create.js --dir BASE [--store S] [--runs second,warm,again]
//        [--lib DIST] [--uv-cache DIR] [--keep] [--json OUT] [--log]
// --log: each run's log (nnrag's stderr) kept as BASE-<run>.log, each line prefixed with
// the seconds since the run began (where the time of a create went).
// BASE-second and BASE-warm are made (and removed first; --keep leaves them after).
// --uv-cache: uv's cache folder for these runs (an empty one measures a cold cache).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { args, opt } from './args.js';

const base = opt('--dir');
if (!base) {
  console.error('usage: node dist/bench/env-create.js --dir BASE [--store S] [--runs second,warm,again] [--json OUT]');
  process.exit(2);
}
const store = opt('--store');
const runs = (opt('--runs') ?? (store ? 'second,warm,again' : 'second')).split(',');
const here = path.dirname(fileURLToPath(import.meta.url));
const lib = opt('--lib') ?? path.resolve(here, '..');
const cli = path.join(lib, 'src', 'cli', 'bin.js');
const uvCache = opt('--uv-cache');
const keepLog = args.includes('--log');

interface Run {
  run: string;
  dir: string;
  exit: number | null;
  wall: number;
  cpu: number;
  loadBefore: number[];
  loadAfter: number[];
  downloaded: string[];
  built: string[];
  groups: { name: string; pins: number; bytecode?: unknown }[];
}

async function timed(run: string, dir: string, extra: string[]): Promise<Run> {
  const loadBefore = loadavg().map((x) => +x.toFixed(2));
  const timeFile = `${dir}.time`;
  const t0 = Date.now();
  const p = spawn(
    '/usr/bin/time',
    [
      '-f',
      '%e %U %S',
      '-o',
      timeFile,
      process.execPath,
      cli,
      ...(store && run !== 'second' ? ['--store', store] : []),
      'env',
      'create',
      dir,
      ...extra,
    ],
    { env: { ...process.env, ...(uvCache ? { UV_CACHE_DIR: uvCache } : {}) }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  // stderr line by line, each with the seconds since the run began
  const stamped: string[] = [];
  let partial = '';
  p.stderr.setEncoding('utf8');
  p.stderr.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    const at = ((Date.now() - t0) / 1000).toFixed(1);
    for (const l of lines) stamped.push(`${at}\t${l}`);
  });
  const status = await new Promise<number | null>((resolve) => p.on('close', (code) => resolve(code)));
  if (partial) stamped.push(`${((Date.now() - t0) / 1000).toFixed(1)}\t${partial}`);
  if (keepLog) writeFileSync(`${base}-${run}.log`, stamped.join('\n') + '\n');
  const [wall, user, sys] = readFileSync(timeFile, 'utf8').trim().split('\n').slice(-1)[0].split(' ').map(Number);
  rmSync(timeFile, { force: true });
  const log = stamped.map((l) => l.slice(l.indexOf('\t') + 1));
  let manifest: { groups?: { name: string; pins: string[]; bytecode?: unknown }[] } = {};
  try {
    manifest = JSON.parse(readFileSync(path.join(dir, 'nnrag-env.json'), 'utf8'));
  } catch {
    /* not made */
  }
  return {
    run,
    dir,
    exit: status,
    wall,
    cpu: +(user + sys).toFixed(2),
    loadBefore,
    loadAfter: loadavg().map((x) => +x.toFixed(2)),
    downloaded: log.filter((l) => /^\s*Downloading /.test(l)).map((l) => l.trim().replace(/^Downloading /, '')),
    built: log.filter((l) => /building the compiled operators|built in/.test(l)).map((l) => l.trim()),
    groups: (manifest.groups ?? []).map((g) => ({ name: g.name, pins: g.pins.length, bytecode: g.bytecode })),
  };
}

const out: Run[] = [];
const second = `${base}-second`;
const warm = `${base}-warm`;
for (const r of runs) {
  if (r === 'second') {
    rmSync(second, { recursive: true, force: true });
    out.push(await timed('second', second, []));
  } else if (r === 'warm') {
    if (!store) throw new Error('--runs warm needs --store');
    rmSync(warm, { recursive: true, force: true });
    out.push(await timed('warm', warm, []));
  } else if (r === 'again') {
    if (!existsSync(warm)) throw new Error('--runs again needs warm first');
    out.push(await timed('again', warm, []));
  } else throw new Error(`unknown run ${r}`);
  const x = out[out.length - 1];
  console.log(
    `${x.run}: exit ${x.exit}, ${x.wall.toFixed(1)} s wall, ${x.cpu.toFixed(1)} s CPU, load ${x.loadBefore[0]} -> ${x.loadAfter[0]}; downloaded ${x.downloaded.length ? x.downloaded.join(', ') : 'nothing'}; ${x.built.length ? x.built.join('; ') : 'nothing built'}`,
  );
  for (const g of x.groups) console.log(`  ${g.name}: ${g.pins} distributions, bytecode ${JSON.stringify(g.bytecode)}`);
}
if (!args.includes('--keep')) for (const d of [second, warm]) rmSync(d, { recursive: true, force: true });
const json = opt('--json');
if (json)
  writeFileSync(
    json,
    JSON.stringify({ uv: execFileSync('uv', ['--version'], { encoding: 'utf8' }).trim(), runs: out }, null, 1),
  );
