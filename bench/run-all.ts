// Runs every benchmark in sequence (`npm run bench`): the ones that need no external
// corpus always, the corpus ones when their corpus is given.
//   NNRAG_BENCH_TIMM=/path/to/pytorch-image-models   timm checkout (index, discovery,
//                                                     extraction, pipeline)
//   NNRAG_BENCH_TORCHVISION=/usr/lib/python3/dist-packages   folder holding torchvision/
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const examples = path.resolve(here, '..', '..', 'examples');
const timm = process.env.NNRAG_BENCH_TIMM;
const tv = process.env.NNRAG_BENCH_TORCHVISION;

const runs: [string, string[]][] = [
  ['extract (example corpus)', ['extract.js', examples]],
  ['validate (pool start, throughput)', ['validate.js', '--workers', '2']],
  ['dedup (100,000 synthetic blocks)', ['dedup.js', '100000']],
  ['search (10,000 synthetic blocks)', ['search.js']],
];
if (timm && existsSync(timm)) {
  runs.push(['index (timm)', ['index.js', '--timm', timm]]);
  runs.push(['discovery recall (timm)', ['discovery.js', timm, 'timm']]);
  runs.push(['extract (timm)', ['extract.js', timm, '--paths', 'timm']]);
  runs.push(['pipeline (timm)', ['pipeline.js', timm, '--paths', 'timm']]);
} else console.log('(NNRAG_BENCH_TIMM not set: timm benchmarks skipped)');
if (tv && existsSync(path.join(tv, 'torchvision')))
  runs.push(['discovery recall (torchvision)', ['discovery.js', tv, 'torchvision']]);

let failed = 0;
for (const [title, args] of runs) {
  console.log(`\n=== ${title}`);
  const r = spawnSync(process.execPath, [path.join(here, args[0]), ...args.slice(1)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.log(`(${title} exited with ${r.status})`);
  }
}
process.exitCode = failed ? 1 : 0;
