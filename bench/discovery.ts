// Discovery recall benchmark (issue 2): compares `nnrag discover` with what a runtime
// import of the package lists as concrete nn.Module subclasses with a forward
// (bench/runtime_blocks.py, run in Debian's Python with torch).
//
// usage: node dist/bench/discovery.js ROOT PACKAGE [--python /usr/bin/python3]
//   e.g. ROOT=/path/to/pytorch-image-models PACKAGE=timm
//        ROOT=/usr/lib/python3/dist-packages PACKAGE=torchvision
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as api from '../src/nnrag.js';

const [root, pkg] = process.argv.slice(2);
if (!root || !pkg) {
  console.error('usage: node dist/bench/discovery.js ROOT PACKAGE [--python PY]');
  process.exit(2);
}
const pi = process.argv.indexOf('--python');
const python = pi > 0 ? process.argv[pi + 1] : '/usr/bin/python3';
const dir = mkdtempSync(path.join(tmpdir(), 'nnrag-discovery-'));
const ws = api.Workspace.open(path.join(dir, 'store'));
let t = performance.now();
await api.index(ws, {
  repos: [
    {
      name: pkg,
      url: null,
      path: path.resolve(root),
      priority: 1,
      paths: [pkg],
      description: null,
      packageRoots: [''],
    },
  ],
});
const indexMs = performance.now() - t;
t = performance.now();
const ours = new Set(
  api
    .discover(ws)
    .filter((b) => b.module === pkg || b.module.startsWith(pkg + '.'))
    .map((b) => b.id),
);
const discoverMs = performance.now() - t;
ws.close();

const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'runtime_blocks.py');
const out = path.join(dir, 'runtime.json');
t = performance.now();
execFileSync(python, [script, path.resolve(root), pkg, out], { stdio: ['ignore', 'ignore', 'ignore'], cwd: dir });
const runtimeMs = performance.now() - t;
const rt = JSON.parse(readFileSync(out, 'utf8')) as { blocks: string[]; import_failures: Record<string, string> };
const truth = new Set(rt.blocks);
const found = [...truth].filter((id) => ours.has(id));
const missed = [...truth].filter((id) => !ours.has(id));
// blocks in modules the runtime could not import cannot be checked either way
const failedMods = Object.keys(rt.import_failures);
const extra = [...ours].filter((id) => !truth.has(id) && !failedMods.some((m) => id.startsWith(m + '.')));
console.log(
  `${pkg}: index ${(indexMs / 1000).toFixed(2)} s, discover ${discoverMs.toFixed(0)} ms, runtime listing ${(runtimeMs / 1000).toFixed(1)} s`,
);
console.log(`runtime blocks ${truth.size}, discovered ${ours.size}`);
console.log(`recall ${found.length}/${truth.size} = ${((100 * found.length) / Math.max(1, truth.size)).toFixed(2)}%`);
console.log(`not in the runtime listing (false positives, modules that imported): ${extra.length}`);
console.log(`modules the runtime could not import: ${failedMods.length} (${failedMods.join(', ')})`);
if (missed.length) console.log(`missed: ${missed.join(', ')}`);
if (extra.length) console.log(`extra: ${extra.join(', ')}`);
