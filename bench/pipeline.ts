// Whole-pipeline benchmark on a real repository (issue 4's per-stage table): index,
// discover, extract and validate every block in the sandbox, then print per-stage pass
// counts and failure categories.
//
// usage: node dist/bench/pipeline.js REPO_PATH [--paths timm] [--store DIR] [--rootfs DIR] [--limit N] [--workers N]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as api from '../src/nnrag.js';
import { extractAndValidate } from '../src/pipeline/pipeline.js';
import { quantile } from '../src/library/stats.js';
import { STAGES, ValidatorPool } from '../src/validate/index.js';
import { args, opt } from './args.js';

const repo = args[0];
if (!repo) {
  console.error(
    'usage: node dist/bench/pipeline.js REPO_PATH [--paths P] [--store DIR] [--rootfs DIR] [--limit N] [--workers N]',
  );
  process.exit(2);
}
const store = opt('--store') ?? mkdtempSync(path.join(tmpdir(), 'nnrag-pipeline-'));
const ws = api.Workspace.open(store);
let t = performance.now();
await api.index(ws, {
  repos: [
    {
      name: path.basename(path.resolve(repo)),
      url: null,
      path: path.resolve(repo),
      priority: 1,
      paths: opt('--paths') ? [opt('--paths')!] : [],
      description: null,
      packageRoots: null,
    },
  ],
});
console.log(`index ${((performance.now() - t) / 1000).toFixed(1)} s`);
let ids = api.discover(ws).map((b) => b.id);
if (opt('--limit')) ids = ids.slice(0, Number(opt('--limit')));
t = performance.now();
const pool = await ValidatorPool.start({
  rootfs: opt('--rootfs'),
  workers: opt('--workers') ? Number(opt('--workers')) : undefined,
  onWarning: (m) => console.error(`warning: ${m}`),
});
// per-stage timings of the validations run now (cached results are not re-timed)
const timings: Partial<Record<string, number>>[] = [];
const validate = pool.validate.bind(pool);
pool.validate = async (req) => {
  const r = await validate(req);
  timings.push(r.timings);
  return r;
};
const records = await extractAndValidate(ws, ids, {
  validator: pool,
  onWarning: (m) => console.error(`warning: ${m}`),
});
await pool.close();
const secs = (performance.now() - t) / 1000;
console.log(
  `extract + validate ${records.length} blocks in ${secs.toFixed(1)} s (${(records.length / secs).toFixed(1)} blocks/s)`,
);
const stages = STAGES;
const counts: Record<string, Record<string, number>> = {};
const cats: Record<string, number> = {};
for (const r of records) {
  const v = r.validation;
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
  console.log(
    `${s.padEnd(12)} ${String(c.pass).padStart(4)}  ${String(c.fail).padStart(4)}  ${String(c.skip).padStart(4)}  ${((100 * c.pass) / records.length).toFixed(1)}%`,
  );
}
const eqRun = (counts.equivalence?.pass ?? 0) + (counts.equivalence?.fail ?? 0);
console.log(`equivalence passes where it ran: ${counts.equivalence?.pass ?? 0}/${eqRun}`);
console.log(`failure categories: ${JSON.stringify(cats)}`);
// namespace stage: names compared with the originals, mismatches, time it adds per block
const ns = records.map((r) => r.validation?.namespace).filter((x) => x !== undefined);
const mism = ns.flatMap((x) => x!.mismatches ?? []);
console.log(
  `namespace: ${ns.filter((x) => x!.checked > 0).length} blocks checked, ${ns.reduce((a, x) => a + x!.checked, 0)} names checked, ` +
    `${ns.reduce((a, x) => a + (x!.skipped ?? 0), 0)} skipped, ${mism.length} mismatches`,
);
const nsMs = timings.map((t) => t.namespace).filter((x): x is number => typeof x === 'number');
if (nsMs.length)
  console.log(
    `namespace stage ms per block: median ${quantile(nsMs, 0.5).toFixed(2)}, p90 ${quantile(nsMs, 0.9).toFixed(2)}, max ${Math.max(...nsMs).toFixed(1)} (${nsMs.length} blocks)`,
  );
for (const m of mism.slice(0, 20)) console.log(`  rebound: ${m.name}: copy ${m.copy}; original ${m.original}`);
const reasons = new Map<string, number>();
for (const x of ns) if (x!.reason) reasons.set(x!.reason.slice(0, 80), (reasons.get(x!.reason.slice(0, 80)) ?? 0) + 1);
if (reasons.size) console.log(`namespace skipped: ${JSON.stringify(Object.fromEntries(reasons))}`);
console.log(`promoted: ${records.filter((r) => r.ok).length}/${records.length}`);
if (args.includes('--verbose')) {
  for (const r of records) {
    const v = r.validation;
    if (!r.ok) console.log(`  ${r.id}: ${v?.category} ${(v?.error ?? r.error ?? '').split('\n')[0].slice(0, 160)}`);
  }
}
ws.close();
