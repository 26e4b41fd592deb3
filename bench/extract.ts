// Benchmark of extraction (issue 3): index a repository, discover its blocks, emit every
// block with a warm index, then check every emitted module with pyflakes (undefined
// names) and by importing it in Debian's Python with torch.
//
// usage: node dist/bench/extract.js REPO_PATH [--paths timm/] [--store DIR] [--python /usr/bin/python3]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as api from '../src/nnrag.js';
import { quantile } from '../src/library/stats.js';
import { args, opt } from './args.js';

const repo = args[0];
if (!repo) {
  console.error('usage: node dist/bench/extract.js REPO_PATH [--paths timm/] [--store DIR] [--python PY]');
  process.exit(2);
}
const store = opt('--store', mkdtempSync(path.join(tmpdir(), 'nnrag-bench-')))!;
const python = opt('--python', '/usr/bin/python3')!;
const paths = opt('--paths') ? [opt('--paths')!] : [];

const ws = api.Workspace.open(store);
let t = performance.now();
await api.index(ws, {
  repos: [
    {
      name: path.basename(path.resolve(repo)),
      url: null,
      path: path.resolve(repo),
      priority: 1,
      paths,
      description: null,
      packageRoots: null,
    },
  ],
});
console.log(`index: ${((performance.now() - t) / 1000).toFixed(2)} s`);
t = performance.now();
const blocks = api.discover(ws);
console.log(`discover: ${blocks.length} blocks in ${(performance.now() - t).toFixed(0)} ms`);
t = performance.now();
ws.corpus(); // warm: facts loaded once
console.log(`load corpus: ${(performance.now() - t).toFixed(0)} ms`);
t = performance.now();
const records = api.extractBlocks(
  ws,
  blocks.map((b) => b.id),
);
const total = performance.now() - t;
const ms = records.map((r) => r.ms);
const lines = records.filter((r) => r.file).map((r) => r.lines);
const emitted = records.filter((r) => r.file).length;
const clean = records.filter((r) => r.ok).length;
console.log(
  `extract: ${emitted}/${records.length} emitted, ${clean} without unresolved names, total ${(total / 1000).toFixed(2)} s`,
);
console.log(
  `per block ms: median ${quantile(ms, 0.5).toFixed(2)}, p90 ${quantile(ms, 0.9).toFixed(2)}, max ${Math.max(...ms).toFixed(1)}`,
);
console.log(`lines: median ${quantile(lines, 0.5)}, p90 ${quantile(lines, 0.9)}, max ${Math.max(...lines)}`);
const renames = records.map((r) => (Array.isArray(r.renames) ? r.renames.length : 0));
console.log(
  `total: ${lines.reduce((x, y) => x + y, 0)} lines, ${renames.reduce((x, y) => x + y, 0)} renames in ${renames.filter((n) => n > 0).length} modules`,
);
const reasons = new Map<string, number>();
for (const r of records)
  for (const d of r.diagnostics) if (d.severity === 'error') reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
console.log(`unresolved by reason: ${JSON.stringify(Object.fromEntries(reasons))}`);

if (args.includes('--no-check')) {
  ws.close();
  process.exit(0);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const checker = path.resolve(here, '..', '..', 'bench', 'check_modules.py');
const out = path.join(store, 'check.json');
t = performance.now();
const repoRoots = new Map(ws.store.listRepos().map((r) => [r.name, r.root]));
const inputs = records
  .filter((r) => r.file)
  .map((r) => ({
    file: r.file,
    originals: ((r.provenance ?? []) as { repo: string; path: string }[]).map((p) =>
      path.join(repoRoots.get(p.repo) ?? '', p.path),
    ),
  }));
const inputFile = path.join(store, 'check-input.json');
writeFileSync(inputFile, JSON.stringify(inputs));
execFileSync(python, [checker, out, inputFile], { stdio: ['ignore', 'ignore', 'inherit'] });
const check = JSON.parse(readFileSync(out, 'utf8')) as Record<
  string,
  { undefined: string[]; undefined_in_original: string[]; errors: string[]; import: string }
>;
const vals = Object.values(check);
const imported = vals.filter((v) => v.import === 'ok').length;
const undef = vals.filter((v) => v.undefined.length).length;
const inherited = vals.filter((v) => v.undefined_in_original.length).length;
const parseErr = vals.filter((v) => v.errors.length).length;
console.log(
  `pyflakes: ${undef} modules with undefined names the originals do not have, ${inherited} with names the original files also leave undefined, ${parseErr} that do not parse`,
);
console.log(
  `import: ${imported}/${vals.length} (${((100 * imported) / vals.length).toFixed(1)}%) in ${((performance.now() - t) / 1000).toFixed(1)} s`,
);
const fails = new Map<string, number>();
for (const [f, v] of Object.entries(check)) {
  if (v.import !== 'ok') {
    const k = v.import.split(':')[0];
    fails.set(k, (fails.get(k) ?? 0) + 1);
    if (args.includes('--verbose')) console.log(`  ${path.basename(f)}: ${v.import}`);
  }
  if (v.undefined.length && args.includes('--verbose')) console.log(`  ${path.basename(f)}: ${v.undefined.join('; ')}`);
}
console.log(`import failures: ${JSON.stringify(Object.fromEntries(fails))}`);
ws.close();
