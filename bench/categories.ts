// Category accuracy against a labelled sample (bench/data/category-labels.tsv: repository,
// block, the category a person gives it), on a store where those repositories were
// extracted (e.g. the reference corpus; `node dist/bench/corpus.js CONFIG --store S`).
// Prints accuracy, the confusion pairs and every miss with the rule that decided it.
//
// usage: node dist/bench/categories.js STORE [LABELS]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IndexStore } from '../src/store/store.js';
import { clearDocs } from '../src/store/search.js';
import { categorize } from '../src/library/category.js';
import { listDocs } from '../src/search/fts.js';
import { refreshSearch } from '../src/search/refresh.js';
import { args } from './args.js';

const store = args[0];
if (!store) {
  console.error('usage: node dist/bench/categories.js STORE [LABELS]');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const labelsFile =
  (args[1] && !args[1].startsWith('--') ? args[1] : undefined) ??
  path.resolve(here, '..', '..', 'bench', 'data', 'category-labels.tsv');
const labels = readFileSync(labelsFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => {
    const [repo, id, category] = l.split('\t');
    return { repo, id, category };
  });
const s = IndexStore.open(store);
// documents are derived data: rebuild them all, so the categories are this code's
clearDocs(s);
refreshSearch(s, { force: true });
const docs = listDocs(s);
let right = 0;
let found = 0;
const confusion = new Map<string, number>();
const misses: string[] = [];
for (const l of labels) {
  // ids may carry the repository where two repositories define the same name
  const d = docs.find((x) => x.origin.repo === l.repo && (x.id === l.id || x.id.endsWith(`:${l.id}`)));
  if (!d) {
    misses.push(`  (not in the store) ${l.repo} ${l.id}`);
    continue;
  }
  found++;
  if (d.category === l.category) right++;
  else {
    const k = `${l.category} → ${d.category}`;
    confusion.set(k, (confusion.get(k) ?? 0) + 1);
    const why = categorize({
      name: d.name,
      docstring: d.docstring,
      layers: d.layers,
      bases: d.bases,
      forwardParams: d.forwardParams,
    }).reason;
    misses.push(`  ${l.id}: ${l.category}, given ${d.category} (${why})`);
  }
}
console.log(
  `category accuracy ${right}/${found} = ${((100 * right) / Math.max(1, found)).toFixed(1)}% (${labels.length} labelled, ${found} in the store)`,
);
console.log(
  'confusions: ' +
    [...confusion]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ×${n}`)
      .join(', '),
);
if (!args.includes('--quiet')) console.log(misses.join('\n'));
s.close();
