// The import graph of src/ follows the layering of docs/ARCHITECTURE.md ("Folders"):
// a module imports only from its own layer or lower ones, never back up —
//   util < parse < config < repos < environment < store (core) < indexer < resolve < discover < emit
//   < validate, library (with the store's record and spec tables and the workspace)
//   < search < export < serve < commands (src/commands/) < cli and the package entry (nnrag.ts).
// Type-only imports count too: a lower layer that names a higher layer's type depends on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers.js';

/** Layer of a source file (path relative to src/), by the longest matching prefix. */
const LAYERS: [string, number][] = [
  ['util/', 0],
  ['parse/', 1],
  ['config/', 2],
  ['repos/', 3],
  ['environment/', 3.5],
  ['store/', 4],
  ['indexer/', 5],
  ['resolve/', 6],
  ['discover/', 7],
  ['emit/', 8],
  ['validate/', 9],
  ['library/', 9],
  ['workspace.ts', 9],
  ['store/records.ts', 9],
  ['store/specs.ts', 9],
  ['search/', 10],
  ['store/search.ts', 10],
  ['export/', 11],
  ['serve/', 12],
  ['commands/', 13],
  ['cli/', 14],
  ['nnrag.ts', 14],
];

function layerOf(rel: string): number {
  let best: [string, number] | null = null;
  for (const l of LAYERS)
    if ((rel === l[0] || rel.startsWith(l[0])) && (!best || l[0].length > best[0].length)) best = l;
  if (!best) throw new Error(`src/${rel} is in no layer: add it to LAYERS`);
  return best[1];
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'/gm;

/** Every relative import of every file of src/, as [from, to] paths relative to src/. */
function edges(): [string, string][] {
  const src = path.join(repoRoot, 'src');
  const out: [string, string][] = [];
  for (const f of sources(src)) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2]).replace(/\.js$/, '.ts');
      const to = path
        .relative(src, path.resolve(path.dirname(f), spec))
        .split(path.sep)
        .join('/');
      out.push([path.relative(src, f).split(path.sep).join('/'), to]);
    }
  }
  return out;
}

test('no module of src/ imports from a higher layer', () => {
  const all = edges();
  assert.ok(all.length > 200, 'the imports were found');
  const up = all.filter(([a, b]) => layerOf(b) > layerOf(a)).map(([a, b]) => `src/${a} → src/${b}`);
  assert.deepEqual(up, []);
});

test('the layering check catches an upward import', () => {
  assert.ok(layerOf('library/library.ts') < layerOf('commands/discover.ts'));
  assert.ok(layerOf('store/store.ts') < layerOf('library/record.ts'));
  assert.ok(layerOf('config/repos.ts') < layerOf('repos/cache.ts'));
});
