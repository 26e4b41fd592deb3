// Multi-repository resolver benchmark (issue 9): index the repositories of a
// repo_config.json (local `path`s allowed) together, discover, extract every block
// without validation, and print per repository: blocks discovered, modules emitted,
// error diagnostics by reason, and (unless --no-check) the pyflakes / import check of
// bench/check_modules.py run with Debian's Python and torch.
//
// usage: node dist/bench/universes.js CONFIG [--repos a/b,c/d] [--store DIR]
//        [--python /usr/bin/python3] [--no-check] [--check-repos a/b,c/d] [--verbose]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as api from '../src/nnrag.js';
import { loadRepoConfig } from '../src/config/repos.js';
import { args, opt } from './args.js';
import { probeHost } from '../src/validate/environment.js';

const config = args[0];
if (!config || config.startsWith('--')) {
  console.error(
    'usage: node dist/bench/universes.js CONFIG [--repos a/b,c/d] [--store DIR] [--python PY] [--no-check] [--check-repos a/b,c/d] [--verbose]',
  );
  process.exit(2);
}
const only = opt('--repos')?.split(',');
const repos = loadRepoConfig(config).filter((r) => !only || only.includes(r.name));
const store = opt('--store') ?? mkdtempSync(path.join(tmpdir(), 'nnrag-universes-'));
const python = opt('--python', '/usr/bin/python3')!;
const ws = api.Workspace.open(store);
let t = performance.now();
await api.index(ws, { repos });
console.log(`index ${repos.length} repositories: ${((performance.now() - t) / 1000).toFixed(2)} s (store ${store})`);
t = performance.now();
const blocks = api.discover(ws);
console.log(`discover: ${blocks.length} blocks in ${(performance.now() - t).toFixed(0)} ms`);
t = performance.now();
ws.corpus();
console.log(`load corpus: ${(performance.now() - t).toFixed(0)} ms`);
t = performance.now();
// what the checking interpreter can import decides, as in validation, whether an interned
// package used as a module object keeps its import (src/resolve/closure.ts)
const importable = (await probeHost(python))?.modules;
const records = api.extractBlocks(
  ws,
  blocks.map((b) => b.id),
  { importable },
);
console.log(`extract ${records.length} blocks: ${((performance.now() - t) / 1000).toFixed(2)} s`);
const od = (
  ws.corpus().moduleLoader as { stats?: { loaded: number; parsed: number; fetched: number; ms: number } } | null
)?.stats;
if (od)
  console.log(
    `on demand: ${od.loaded} modules read outside the configured paths (${od.parsed} parsed, ${od.fetched} fetched through git) in ${od.ms.toFixed(0)} ms`,
  );

type Row = {
  discovered: number;
  emitted: number;
  reasons: Map<string, number>;
  imported: number;
  undef: number;
  failures: Map<string, number>;
};
const rows = new Map<string, Row>();
for (const r of repos)
  rows.set(r.name, { discovered: 0, emitted: 0, reasons: new Map(), imported: 0, undef: 0, failures: new Map() });
const repoOf = new Map<string, string>();
records.forEach((rec, i) => {
  const repo = blocks[i].repo;
  repoOf.set(rec.file, repo);
  const row = rows.get(repo)!;
  row.discovered++;
  if (rec.file) row.emitted++;
  for (const d of rec.diagnostics)
    if (d.severity === 'error') row.reasons.set(d.reason, (row.reasons.get(d.reason) ?? 0) + 1);
});

if (!args.includes('--no-check')) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const checker = path.resolve(here, '..', '..', 'bench', 'check_modules.py');
  const out = path.join(store, 'check.json');
  const roots = new Map(ws.store.listRepos().map((r) => [r.name, r.root]));
  const checkRepos = opt('--check-repos')?.split(',');
  const inputs = records
    .filter((r) => r.file && (!checkRepos || checkRepos.includes(repoOf.get(r.file) ?? '')))
    .map((r) => ({
      file: r.file,
      originals: ((r.provenance ?? []) as { repo: string; path: string }[]).map((p) =>
        path.join(roots.get(p.repo) ?? '', p.path),
      ),
    }));
  const inputFile = path.join(store, 'check-input.json');
  writeFileSync(inputFile, JSON.stringify(inputs));
  execFileSync(python, [checker, out, inputFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  const check = JSON.parse(readFileSync(out, 'utf8')) as Record<string, { undefined: string[]; import: string }>;
  for (const [file, v] of Object.entries(check)) {
    const row = rows.get(repoOf.get(file) ?? '');
    if (!row) continue;
    if (v.import === 'ok') row.imported++;
    else {
      const k = v.import.slice(0, 80);
      row.failures.set(k, (row.failures.get(k) ?? 0) + 1);
    }
    if (v.undefined.length) {
      row.undef++;
      if (args.includes('--verbose')) console.log(`  ${path.basename(file)}: ${v.undefined.join('; ')}`);
    }
  }
}
for (const [name, r] of rows) {
  console.log(
    `${name}: discovered ${r.discovered}, emitted ${r.emitted}, errors ${JSON.stringify(Object.fromEntries(r.reasons))}` +
      (args.includes('--no-check') ? '' : `, import ${r.imported}/${r.emitted}, new undefined names in ${r.undef}`),
  );
  const top = [...r.failures].sort((a, b) => b[1] - a[1]).slice(0, 5);
  for (const [k, n] of top) console.log(`    ${n} × ${k}`);
}
ws.close();
