// Slim emission without validation (docs/ARCHITECTURE.md "Slim emission"): for every
// block of an indexed store (or of a repo config, indexed first), the faithful and the
// slim module (seeds and parameter values as the pipeline takes them: call sites, and the
// arguments the stored record was validated with when the store has one, else data sites;
// no sandbox probe), lines per repository (median / p90 / max), and
// which slim modules still import `rich` or define a class `Registry`. Slim here is not
// proven: `extract` keeps it only when it validates (bench/corpus.ts measures that).
//
// usage: node dist/bench/slim.js (CONFIG | --store DIR) [--store DIR] [--repos a/b,c/d]
//   [--limit N] (the first N blocks) [--out DIR] (writes each slim module to DIR/<block id>.py,
//   to compare two versions byte for byte)
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as api from '../src/nnrag.js';
import { loadRepoConfig } from '../src/config/repos.js';
import { callSites, dataSites, slimEntry, slimSeeds } from '../src/pipeline/pipeline.js';
import { getExtraction } from '../src/store/records.js';
import { args, opt } from './args.js';

const config = args[0] && !args[0].startsWith('--') ? args[0] : null;
const only = opt('--repos')?.split(',');
const store = opt('--store') ?? mkdtempSync(path.join(tmpdir(), 'nnrag-slim-'));
const ws = api.Workspace.open(store);
if (config) await api.index(ws, { repos: loadRepoConfig(config).filter((r) => !only || only.includes(r.name)) });
else await api.ready();
const limit = Number(opt('--limit') ?? Infinity);
const out = opt('--out');
if (out) mkdirSync(out, { recursive: true });
const blocks = api
  .discover(ws)
  .filter((b) => !only || only.includes(b.repo))
  .slice(0, limit);
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] : 0;
};
type Row = { faithful: number[]; slim: number[]; rich: string[]; registry: string[]; t: number; cpu: number };
const rows = new Map<string, Row>();
const t0 = performance.now();
for (const b of blocks) {
  let r = rows.get(b.repo);
  if (!r) rows.set(b.repo, (r = { faithful: [], slim: [], rich: [], registry: [], t: 0, cpu: 0 }));
  const f = api.extractText(ws, b.id, { profile: 'faithful' });
  if (!f.text) continue;
  const t = performance.now();
  const c = process.cpuUsage();
  // the arguments the stored faithful module was validated with (a store `extract` filled)
  const validated = getExtraction(ws.store, b.id)?.record.validation?.args ?? null;
  const sites = { callSites: callSites(ws, b.id), dataSites: dataSites(ws, b.id) };
  const s = api.extractText(
    ws,
    b.id,
    { profile: 'slim' },
    { seeds: slimSeeds(sites, validated), entry: slimEntry(sites, validated) },
  );
  r.t += performance.now() - t;
  const dc = process.cpuUsage(c);
  r.cpu += (dc.user + dc.system) / 1000;
  if (out) writeFileSync(path.join(out, `${b.id.replace(/[^\w.-]+/g, '_')}.py`), s.text ?? '');
  if (!s.text) continue;
  r.faithful.push(f.record.lines);
  r.slim.push(s.record.lines);
  const body = s.text
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
  if (/^\s*(import rich|from rich[. ])/m.test(body)) r.rich.push(b.id);
  if (/^class Registry\b/m.test(body)) r.registry.push(b.id);
}
console.log(`${blocks.length} blocks, ${((performance.now() - t0) / 1000).toFixed(0)} s (store ${store})`);
console.log(
  '| repository | blocks | faithful median / p90 / max | slim median / p90 / max | slim ms per block (CPU ms) | slim importing rich | slim defining Registry |',
);
console.log('|---|---|---|---|---|---|---|');
const f = (xs: number[]) => `${q(xs, 0.5)} / ${q(xs, 0.9)} / ${Math.max(0, ...xs)}`;
for (const [name, r] of [...rows].sort((a, b) => a[0].localeCompare(b[0]))) {
  console.log(
    `| ${name} | ${r.slim.length} | ${f(r.faithful)} | ${f(r.slim)} | ${(r.t / Math.max(1, r.slim.length)).toFixed(0)} (${(r.cpu / Math.max(1, r.slim.length)).toFixed(0)}) | ${r.rich.length} | ${r.registry.length} |`,
  );
}
for (const [name, r] of rows) {
  if (r.registry.length)
    console.log(
      `  ${name}: Registry kept in ${r.registry.slice(0, 5).join(', ')}${r.registry.length > 5 ? ', …' : ''}`,
    );
}
ws.close();
