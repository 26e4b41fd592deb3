// The import graph of src/ follows the layering of docs/ARCHITECTURE.md ("Layers"):
// a module imports only from its own layer or lower ones, never back up —
//   util < parse < config < repos < environment < records (the shared record types)
//   < store < indexer < resolve < discover < emit < validate, library (and the workspace)
//   < search < export < serve < commands (src/commands/) < cli and the package entry (nnrag.ts).
// Type-only imports count too (`import type`, inline `import('…')` types, dynamic imports):
// a lower layer that names a higher layer's type depends on it. And the graph has no cycle,
// neither between files nor between folders (two folders of one layer, such as validate/
// and library/, may not import each other both ways).
// Run it alone: npm run build && node --test dist/test/store/layers.test.js
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
  ['records/', 3.7],
  ['store/', 4],
  ['indexer/', 5],
  ['resolve/', 6],
  ['discover/', 7],
  ['emit/', 8],
  ['validate/', 9],
  ['library/', 9],
  ['workspace.ts', 9],
  ['search/', 10],
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

/** `import … from './x.js'`, `export … from`, `import './x.js'`, and `import('./x.js')`
 *  (a dynamic import, or an inline type). */
const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'|\bimport\('(\.[^']+)'\)/gm;

/** Every relative import of every file of src/, as [from, to] paths relative to src/. */
function edges(): [string, string][] {
  const src = path.join(repoRoot, 'src');
  const out: [string, string][] = [];
  for (const f of sources(src)) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2] ?? m[3]).replace(/\.js$/, '.ts');
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

/** The cycles of a directed graph: its strongly connected components of more than one
 *  node, or of one node with an edge to itself (Tarjan's algorithm). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.has(v)) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

function graphOf(pairs: [string, string][]): Map<string, Set<string>> {
  const g = new Map<string, Set<string>>();
  for (const [a, b] of pairs) {
    if (!g.has(a)) g.set(a, new Set());
    if (!g.has(b)) g.set(b, new Set());
    g.get(a)!.add(b);
  }
  return g;
}

/** The folder of a source file (`library/spec.ts` → `library`), or the file itself at the top. */
const folderOf = (rel: string) => rel.split('/')[0];

test('the import graph of src/ has no cycle, between files or between folders', () => {
  const all = edges();
  assert.deepEqual(cycles(graphOf(all)), [], 'files that import each other');
  const folders = all.map(([a, b]): [string, string] => [folderOf(a), folderOf(b)]).filter(([a, b]) => a !== b);
  assert.deepEqual(cycles(graphOf(folders)), [], 'folders that import each other');
});

test('the cycle check finds a cycle', () => {
  const g = graphOf([
    ['a', 'b'],
    ['b', 'c'],
    ['c', 'a'],
    ['c', 'd'],
  ]);
  assert.deepEqual(cycles(g), [['a', 'b', 'c']]);
  assert.deepEqual(cycles(graphOf([['a', 'a']])), [['a']]);
  assert.deepEqual(cycles(graphOf([['a', 'b']])), []);
});

test('the layering check catches an upward import', () => {
  assert.ok(layerOf('library/library.ts') < layerOf('commands/discover.ts'));
  assert.ok(layerOf('store/store.ts') < layerOf('library/spec.ts'));
  assert.ok(layerOf('config/repos.ts') < layerOf('repos/cache.ts'));
  assert.ok(layerOf('records/block.ts') < layerOf('store/records.ts'));
  assert.ok(layerOf('records/search.ts') < layerOf('store/search.ts'));
});
