// Library + report benchmark on an existing store (e.g. the one bench/pipeline.ts filled
// with timm): builds specs, manifests and requirements, de-duplicates, computes the report,
// and prints the report with the wall-clock time of each phase. Writes report.json and
// report.html next to the library folder.
//
// usage: node dist/bench/report.js STORE [--out DIR] [--python PY] [--snapshot DIR]
//   --snapshot DIR  work on a copy of STORE's database in DIR (SQLite online backup), so a
//                   store someone else uses is only read
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import * as api from '../src/nnrag.js';
import { buildLibrary, runDedup } from '../src/library/library.js';
import { trainingPairs } from '../src/library/pairs.js';
import { buildReport, reportHtml, reportText } from '../src/library/report.js';
import { args, opt } from './args.js';

let store = args[0];
if (!store) {
  console.error('usage: node dist/bench/report.js STORE [--out DIR] [--python PY] [--snapshot DIR]');
  process.exit(2);
}
const snapshot = opt('--snapshot');
if (snapshot) {
  mkdirSync(snapshot, { recursive: true });
  const src = new Database(path.join(store, 'index.sqlite'), { readonly: true });
  await src.backup(path.join(snapshot, 'index.sqlite'));
  src.close();
  store = snapshot;
}

const phases: Record<string, number> = {};
const time = async <T>(name: string, f: () => Promise<T> | T): Promise<T> => {
  const t = performance.now();
  const r = await f();
  phases[name] = Math.round(performance.now() - t);
  return r;
};

const ws = await time('open', () => api.Workspace.open(store));
const lib = await time('library', () => buildLibrary(ws, { out: opt('--out'), python: opt('--python') }));
const dd = await time('dedup', () => runDedup(ws));
const report = await time('report', () => buildReport(ws.store, { storeDir: ws.storeDir }));
const pairs = await time('pairs', () => trainingPairs(ws.store));
writeFileSync(path.join(lib.out, 'report.json'), JSON.stringify(report, null, 2) + '\n');
writeFileSync(path.join(lib.out, 'report.html'), reportHtml(report));
ws.close();

console.log(reportText(report));
console.log('');
console.log(
  `library: ${lib.specs} specs (${Object.entries(lib.byStatus)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')})`,
);
console.log(
  `categories: ${Object.entries(lib.byCategory)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`,
);
console.log(
  `repositories: ${lib.manifest.repos.map((r) => `${r.name} ${r.license} ${r.files.length} files ${r.revision_swhid ?? ''}`).join('; ')}`,
);
console.log(`requirements: ${lib.requirements.join(' ')}`);
console.log(`dedup: ${dd.uniqueCount} unique of ${dd.total}, clusters ${JSON.stringify(dd.kinds)}`);
console.log(`training pairs (validated): ${pairs.length}`);
if (lib.warnings.length) console.log(`warnings: ${lib.warnings.length} (first: ${lib.warnings[0]})`);
console.log(
  `phases (ms): ${Object.entries(phases)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`,
);
console.log(`wrote ${path.join(lib.out, 'report.json')} and report.html`);
