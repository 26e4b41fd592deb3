// Whole-pipeline benchmark on a real repository (issue 4's per-stage table): index,
// discover, extract and validate every block in the sandbox, then print per-stage pass
// counts and failure categories.
//
// usage: node dist/bench/pipeline.js REPO_PATH [--paths timm] [--store DIR] [--rootfs DIR] [--limit N] [--workers N]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as api from '../src/api.js';
import { extractAndValidate } from '../src/pipeline.js';
import { args, opt } from './args.js';

const repo = args[0];
if (!repo) {
  console.error('usage: node dist/bench/pipeline.js REPO_PATH [--paths P] [--store DIR] [--rootfs DIR] [--limit N] [--workers N]');
  process.exit(2);
}
const store = opt('--store') ?? mkdtempSync(path.join(tmpdir(), 'nnrag-pipeline-'));
const ws = api.Workspace.open(store);
let t = performance.now();
await api.index(ws, {
  repos: [{ name: path.basename(path.resolve(repo)), url: null, path: path.resolve(repo), priority: 1, paths: opt('--paths') ? [opt('--paths')!] : [], description: null, packageRoots: null }],
});
console.log(`index ${((performance.now() - t) / 1000).toFixed(1)} s`);
let ids = api.discover(ws).map((b) => b.id);
if (opt('--limit')) ids = ids.slice(0, Number(opt('--limit')));
t = performance.now();
const records = await extractAndValidate(ws, ids, {
  pool: { rootfs: opt('--rootfs'), workers: opt('--workers') ? Number(opt('--workers')) : undefined },
  onWarning: (m) => console.error(`warning: ${m}`),
});
const secs = (performance.now() - t) / 1000;
console.log(`extract + validate ${records.length} blocks in ${secs.toFixed(1)} s (${(records.length / secs).toFixed(1)} blocks/s)`);
const stages = ['parse', 'compile', 'import', 'instantiate', 'forward', 'equivalence'];
const counts: Record<string, Record<string, number>> = {};
const cats: Record<string, number> = {};
for (const r of records) {
  const v = r.validation as { stages: Record<string, string>; category: string | null } | undefined;
  if (!v) {
    cats['not-emitted'] = (cats['not-emitted'] ?? 0) + 1;
    continue;
  }
  for (const s of stages) {
    counts[s] ??= { pass: 0, fail: 0, skip: 0 };
    counts[s][v.stages[s]]++;
  }
  if (v.category) cats[v.category] = (cats[v.category] ?? 0) + 1;
}
console.log('stage        pass  fail  skip  pass%');
for (const s of stages) {
  const c = counts[s] ?? { pass: 0, fail: 0, skip: 0 };
  console.log(`${s.padEnd(12)} ${String(c.pass).padStart(4)}  ${String(c.fail).padStart(4)}  ${String(c.skip).padStart(4)}  ${((100 * c.pass) / records.length).toFixed(1)}%`);
}
const eqRun = (counts.equivalence?.pass ?? 0) + (counts.equivalence?.fail ?? 0);
console.log(`equivalence passes where it ran: ${counts.equivalence?.pass ?? 0}/${eqRun}`);
console.log(`failure categories: ${JSON.stringify(cats)}`);
console.log(`promoted: ${records.filter((r) => r.ok).length}/${records.length}`);
if (args.includes('--verbose')) {
  for (const r of records) {
    const v = r.validation as { category: string | null; error: string | null; stage: string | null } | undefined;
    if (!r.ok) console.log(`  ${r.id}: ${v?.category} ${(v?.error ?? r.error ?? '').split('\n')[0].slice(0, 160)}`);
  }
}
ws.close();
