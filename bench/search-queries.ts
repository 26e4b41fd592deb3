// Search relevance on judged query sets (bench/data/search-queries.tsv, tuned on, and
// bench/data/search-queries-heldout.tsv, written before any result was seen): for each
// query, the rank of the first expected class name among the result entries as
// `nnrag search` shows them (blocks sharing a class name are one entry), then MRR (mean
// reciprocal rank, 0 when none in the first 20 entries) and recall@5 (share of queries
// with an expected block in the first 5 entries). A query none of whose names is a block
// of the store is skipped (counted), so one file serves stores of different repositories.
// Runs as `nnrag search` does by default (blocks that failed validation left out unless
// nothing else matches).
//
// usage: node dist/bench/search-queries.js STORE [QUERIES.tsv …] [--quiet]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IndexStore } from '../src/store/store.js';
import { clearDocs } from '../src/store/search.js';
import { refreshSearch } from '../src/search/refresh.js';
import { listDocs, searchBlocks } from '../src/search/fts.js';
import { args } from './args.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const data = path.resolve(here, '..', '..', 'bench', 'data');
const store = args[0];
if (!store) {
  console.error('usage: node dist/bench/search-queries.js STORE [QUERIES.tsv …] [--quiet]');
  process.exit(2);
}
const files = args.slice(1).filter((a) => !a.startsWith('--'));
const sets = files.length
  ? files
  : [path.join(data, 'search-queries.tsv'), path.join(data, 'search-queries-heldout.tsv')];

function readQueries(file: string): { q: string; expect: string[] }[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => {
      const [q, names] = l.split('\t');
      return {
        q,
        expect: (names ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      };
    });
}

const s = IndexStore.open(store);
// documents are derived data: rebuild them all, so they are this code's
clearDocs(s);
refreshSearch(s, { force: true });
const names = new Set(listDocs(s).map((d) => d.name));
for (const file of sets) {
  const judged = readQueries(file);
  let rr = 0;
  let at5 = 0;
  let n = 0;
  const out: string[] = [];
  for (const { q, expect } of judged) {
    if (!expect.some((e) => names.has(e))) continue;
    n++;
    const res = searchBlocks(s, q, { limit: 20 });
    // one entry per class name, in the order shown
    const shown = [...new Set(res.hits.map((h) => h.name))];
    const rank = shown.findIndex((x) => expect.includes(x)) + 1;
    if (rank > 0) rr += 1 / rank;
    if (rank > 0 && rank <= 5) at5++;
    out.push(`${rank ? String(rank).padStart(2) : ' -'}  ${q.padEnd(36)} ${shown.slice(0, 4).join(', ')}`);
  }
  if (!args.includes('--quiet')) console.log(out.join('\n'));
  console.log(
    `${path.basename(file)}: MRR ${(rr / Math.max(1, n)).toFixed(3)}  recall@5 ${((100 * at5) / Math.max(1, n)).toFixed(0)}%  (${n} of ${judged.length} queries have a judged block in the store)`,
  );
}
s.close();
