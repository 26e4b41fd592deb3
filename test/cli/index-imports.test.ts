// What `nnrag index` loads in its main thread before its parse workers start (issue 27's
// cold index): bin.ts runs it through cli/run.ts and cli/index-command.ts, and the modules
// those import statically (the compiled JavaScript's `import … from`, which the ESM loader
// reads before any of their code runs) must not reach the Workspace's resolver and slim
// emission, nor tree-sitter's JavaScript: the index's own thread never parses or resolves.
// Dynamic imports (`import('…')`) load on demand and are not followed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers.js';

const DIST = path.join(repoRoot, 'dist', 'src');
/** Static imports of compiled JavaScript: `import … from '…'`, `export … from '…'`,
 *  `import '…'` (tsc erases type-only imports). */
const STATIC = /^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm;

/** Files (relative to dist/src) and packages loaded eagerly from `roots`. */
function eagerClosure(roots: string[]): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (rel: string) => {
    if (files.has(rel)) return;
    files.add(rel);
    const text = readFileSync(path.join(DIST, rel), 'utf8');
    for (const m of text.matchAll(STATIC)) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith('.')) visit(path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec)));
      else if (!spec.startsWith('node:')) packages.add(spec);
    }
  };
  for (const r of roots) visit(r);
  return { files, packages };
}

test('nnrag index loads neither the Workspace, the resolver, slim emission nor tree-sitter in its own thread', () => {
  assert.ok(existsSync(path.join(DIST, 'cli', 'index-command.js')), 'run npm run build first');
  const { files, packages } = eagerClosure(['cli/bin.js', 'cli/run.js', 'cli/index-command.js']);
  // the closure is real: it reaches the indexer, the store and SQLite
  for (const f of ['indexer/indexer.js', 'indexer/pool.js', 'store/store.js']) assert.ok(files.has(f), f);
  assert.ok(packages.has('better-sqlite3'));
  const unwanted = [...files].filter(
    (f) => f === 'workspace.js' || f.startsWith('resolve/') || f.startsWith('emit/') || f.startsWith('parse/binder'),
  );
  assert.deepEqual(unwanted, []);
  assert.ok(!files.has('parse/parser.js'), 'parse/parser.js (web-tree-sitter) is loaded by the parse workers only');
  assert.ok(!packages.has('web-tree-sitter'));
});
