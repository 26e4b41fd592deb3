// The pipeline's cost (issue 27), whole processes: for each nnrag build given (default:
// this one), `nnrag extract` on a corpus config cold (empty store, harvests included),
// warm (nothing changed), and after one file was changed (a comment line appended to a
// copy of it, or a replacement: --replace); wall and CPU time of each process, the blocks re-validated, and the block
// counts with their verdicts, which must be equal across builds. The repositories are
// copied first (the change must not touch the corpus). Then, for builds that have it,
// `nnrag report` of the cold run (the per-phase table).
//
// usage: node dist/bench/cost.js --config FILE [--names-json FILE] [--touch REPO_NAME:REL_PATH]
//          [--build DIR …] [--runs N] [--keep DIR] [--from-store DIR]
//   --build    an nnrag checkout with dist/ built (repeatable; default this checkout); the
//              builds run back to back, in the order given, on the same copies
//   --runs     warm runs per build (the median is printed; default 3)
//   --keep     the work folder (its repository copies are reused when present)
//   --from-store  start each build from a copy of this store instead of an empty one
//   --env      validate in this PyPI environment (`nnrag extract --env`)
//   --replace 'FROM=>TO'  change the touched file by replacing the first FROM with TO (a
//              code edit: a function's body) instead of appending a comment line
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { buildDirs, opt } from './args.js';

const config = opt('--config');
if (!config) {
  console.error(
    'usage: node dist/bench/cost.js --config FILE [--names-json FILE] [--touch REPO:PATH] [--build DIR …] [--runs N]',
  );
  process.exit(2);
}
const builds = buildDirs();
const runs = Number(opt('--runs', '3'));
const names = opt('--names-json');
const touch = opt('--touch');
const work = opt('--keep') ?? mkdtempSync(path.join(tmpdir(), 'nnrag-cost-'));
const fromStore = opt('--from-store') ? path.resolve(opt('--from-store')!) : null;
const envDir = opt('--env');
const replace = opt('--replace');

// copies of the repositories, and the config naming the copies
const cfg = JSON.parse(readFileSync(config, 'utf8')) as Record<string, { path?: string; [k: string]: unknown }>;
const copies: Record<string, string> = {};
for (const [name, spec] of Object.entries(cfg)) {
  if (!spec.path) continue;
  const src = path.resolve(path.dirname(config), spec.path);
  const dst = path.join(work, 'repos', name.replace(/[^\w.-]+/g, '+'));
  if (!existsSync(dst)) cpSync(src, dst, { recursive: true, filter: (f) => !f.split(path.sep).includes('.git') });
  copies[name] = dst;
  spec.path = dst;
}
const cfgFile = path.join(work, 'config.json');
writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));

interface Run {
  wall: number;
  cpu: number;
  records: Rec[];
}
interface Rec {
  id: string;
  ok: boolean;
  repository: string | null;
  lines?: number;
  emission?: { profile?: string; fallbackReason?: string };
  validation?: {
    stages: Record<string, string>;
    category?: string | null;
    usage?: string;
    equivalence?: { status?: string };
  };
  reuse?: { reused: boolean };
}

function nnrag(build: string, store: string, argv: string[]): Run {
  const sel = names ? ['--names-json', names] : ['--all'];
  const cmd = [
    '-f',
    '%e %U %S',
    process.execPath,
    path.join(build, 'dist/src/cli/bin.js'),
    ...argv,
    ...sel,
    ...(envDir ? ['--env', envDir] : []),
    '--store',
    store,
    '--json',
  ];
  const r = spawnSync('/usr/bin/time', cmd, { encoding: 'utf8', maxBuffer: 1 << 30, env: process.env });
  const timeLine = r.stderr.trim().split('\n').pop() ?? '';
  const [wall, user, sys] = timeLine.split(' ').map(Number);
  let records: Rec[] = [];
  try {
    records = JSON.parse(r.stdout) as Rec[];
  } catch {
    console.error(`${build}: ${argv.join(' ')} printed no JSON (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  }
  return { wall, cpu: user + sys, records };
}

/** Verdict of a block: promoted or not, each stage, the profile kept (its lines, the
 *  fallback's reason), equivalence, and the usage line. */
function verdicts(records: Rec[]): Map<string, string> {
  return new Map(
    records.map((r) => [
      r.id,
      `${r.ok ? 'ok' : 'failed'} ${r.emission?.profile ?? '-'} ${r.lines ?? '-'} lines ${Object.entries(
        r.validation?.stages ?? {},
      )
        .map(([k, v]) => `${k}:${v}`)
        .join(' ')} equivalence ${r.validation?.equivalence?.status ?? '-'}; fallback ${
        r.emission?.fallbackReason?.split(':')[0] ?? '-'
      }; usage ${r.validation?.usage ?? '-'}`,
    ]),
  );
}

function perRepo(
  records: Rec[],
): Record<string, { blocks: number; ok: number; forward: number; equivalence: number; slim: number }> {
  const out: Record<string, { blocks: number; ok: number; forward: number; equivalence: number; slim: number }> = {};
  for (const r of records) {
    const o = (out[r.repository ?? '?'] ??= { blocks: 0, ok: 0, forward: 0, equivalence: 0, slim: 0 });
    o.blocks++;
    if (r.ok) o.ok++;
    if (r.validation?.stages.forward === 'pass') o.forward++;
    if (r.validation?.stages.equivalence === 'pass') o.equivalence++;
    if (r.emission?.profile === 'slim') o.slim++;
  }
  return out;
}

/** The per-phase table of the run that just ended (`nnrag report`'s cost section), for
 *  builds that store one. */
function costTable(build: string, store: string): void {
  const rep = spawnSync(
    process.execPath,
    [path.join(build, 'dist/src/cli/bin.js'), 'report', '--no-dedup', '--store', store],
    { encoding: 'utf8' },
  );
  const lines = rep.status === 0 ? rep.stdout.split('\n') : [];
  const at = lines.findIndex((l) => l.startsWith('cost of the last'));
  if (at < 0) return;
  const end = lines.indexOf('', at);
  console.log(lines.slice(at, end < 0 ? undefined : end).join('\n'));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (r: { wall: number; cpu: number }) => `${r.wall.toFixed(1)} s wall, ${r.cpu.toFixed(1)} s CPU`;

console.log(
  `load average at start: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; work folder ${work}`,
);
const results: { build: string; cold: Run; warm: Run[]; touched: Run | null }[] = [];
for (const build of builds) {
  const store = path.join(work, `store-${results.length}`);
  rmSync(store, { recursive: true, force: true });
  // --from-store: start from a copy of a store a cold run made (of the same copies)
  if (fromStore) cpSync(fromStore, store, { recursive: true });
  const cold = nnrag(build, store, ['extract', '--config', cfgFile]);
  console.log(
    `${build}: ${fromStore ? `first run on a copy of ${fromStore}` : 'cold'} ${fmt(cold)}, ${cold.records.length} blocks (load ${loadavg()[0].toFixed(2)})`,
  );
  costTable(build, store);
  const warm: Run[] = [];
  for (let i = 0; i < runs; i++) warm.push(nnrag(build, store, ['extract', '--config', cfgFile]));
  const w = { wall: median(warm.map((x) => x.wall)), cpu: median(warm.map((x) => x.cpu)) };
  console.log(
    `${build}: warm (median of ${runs}) ${fmt(w)}; each ${warm.map((x) => x.wall.toFixed(1)).join(', ')} s; reused ${warm[0].records.filter((r) => r.reuse?.reused).length}/${warm[0].records.length} (load ${loadavg()[0].toFixed(2)})`,
  );
  costTable(build, store);
  let touched: Run | null = null;
  if (touch) {
    const [repo, rel] = [touch.slice(0, touch.lastIndexOf(':')), touch.slice(touch.lastIndexOf(':') + 1)];
    const file = path.join(copies[repo], rel);
    const before = readFileSync(file);
    if (replace) {
      const [from, to] = replace.split('=>');
      const text = before.toString('utf8');
      if (to === undefined || !text.includes(from)) throw new Error(`--replace: '${from}' is not in ${file}`);
      writeFileSync(file, text.replace(from, to));
    } else appendFileSync(file, '\n# changed by bench/cost\n');
    try {
      touched = nnrag(build, store, ['extract', '--config', cfgFile]);
    } finally {
      writeFileSync(file, before);
    }
    const redone = touched.records.filter((r) => r.reuse && !r.reuse.reused).length;
    console.log(
      `${build}: ${rel} changed: ${fmt(touched)}; re-validated ${touched.records.some((r) => r.reuse) ? redone : '? (the build does not say)'} of ${touched.records.length} blocks`,
    );
    costTable(build, store);
  }
  results.push({ build, cold, warm, touched });
}

// the verdicts must be equal across builds, and per repository
console.log('\nper repository (blocks, promoted, forward pass, equivalence pass, slim kept):');
for (const r of results) console.log(`  ${r.build}: ${JSON.stringify(perRepo(r.cold.records))}`);
if (results.length > 1) {
  const a = verdicts(results[0].cold.records);
  for (const r of results.slice(1)) {
    const b = verdicts(r.cold.records);
    const diff = [...new Set([...a.keys(), ...b.keys()])].filter((id) => a.get(id) !== b.get(id));
    console.log(
      `verdicts ${results[0].build} vs ${r.build}: ${diff.length ? `${diff.length} differ` : 'equal'} (${a.size} vs ${b.size} blocks)`,
    );
    for (const id of diff.slice(0, 20)) console.log(`  ${id}: ${a.get(id) ?? '(none)'} → ${b.get(id) ?? '(none)'}`);
  }
}
console.log(
  `load average at end: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
