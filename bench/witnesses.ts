// Re-run of `nnrag witnesses` with nothing changed, timed as a whole process (issue 11:
// at most 2 s): the command reads the stored harvests of every repository of a store
// made by `bench/corpus.js --store DIR` (or `nnrag extract`/`nnrag witnesses`), and must
// not start validation workers to learn the environment id. Prints each run's wall
// time, then min / median / max.
//
// usage: node dist/bench/witnesses.js STORE [--runs N]
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { args, opt } from './args.js';

const store = args[0];
if (!store || store.startsWith('--')) {
  console.error('usage: node dist/bench/witnesses.js STORE [--runs N]');
  process.exit(2);
}
const runs = Number(opt('--runs') ?? 5);
const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli', 'bin.js');
const times: number[] = [];
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  const r = spawnSync(process.execPath, [cli, 'witnesses', '--store', store, '--json'], { encoding: 'utf8' });
  const ms = performance.now() - t;
  if (r.status !== 0 && r.status !== 1) {
    console.error(r.stderr);
    process.exit(1);
  }
  const got = JSON.parse(r.stdout) as { repo: string; cached: boolean | null }[];
  const fresh = got.filter((x) => x.cached !== true).map((x) => x.repo);
  console.log(
    `run ${i + 1}: ${(ms / 1000).toFixed(2)} s, ${got.length} repositories${fresh.length ? `, harvested now: ${fresh.join(', ')}` : ', all stored'}`,
  );
  times.push(ms);
}
const sorted = [...times].sort((a, b) => a - b);
console.log(
  `nnrag witnesses, nothing changed: min ${(sorted[0] / 1000).toFixed(2)} s, median ${(sorted[Math.floor(sorted.length / 2)] / 1000).toFixed(2)} s, max ${(sorted[sorted.length - 1] / 1000).toFixed(2)} s over ${runs} runs`,
);
