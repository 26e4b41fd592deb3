// What `nnrag index` loads in its main thread, and when its parse workers start (issue 27's
// cold index): bin.ts runs it through cli/run.ts and cli/index-command.ts, and the modules
// those import statically (the compiled JavaScript's `import … from`, which the ESM loader
// reads before any of their code runs) must not reach the Workspace's resolver and slim
// emission, nor tree-sitter's JavaScript: the index's own thread never parses or resolves.
// A cold index starts its workers before loading those (cli/index-early.ts, which loads
// neither SQLite nor the indexer), only when the command would start the same pool.
// Dynamic imports (`import('…')`) load on demand and are not followed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { earlyIndexPool } from '../../src/cli/index-early.js';
import { repoRoot, tempDir } from '../helpers.js';

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
  const { files, packages } = eagerClosure(['cli/bin.js', 'cli/index-early.js', 'cli/run.js', 'cli/index-command.js']);
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

test('the early start loads the pool alone: neither SQLite nor the indexer', () => {
  const { files, packages } = eagerClosure(['cli/index-early.js']);
  assert.ok(files.has('indexer/pool.js'));
  assert.ok(!files.has('store/store.js') && !files.has('indexer/indexer.js'), [...files].join(' '));
  assert.ok(!packages.has('better-sqlite3'));
});

test('parse workers start early only for a cold index with the default pool', async () => {
  const fresh = path.join(tempDir(), 'store');
  const stored = tempDir();
  writeFileSync(path.join(stored, 'index.sqlite'), '');
  assert.equal(earlyIndexPool(['--store', stored, '--repo', 'x']), undefined, 'a store exists');
  assert.equal(
    earlyIndexPool(['--store', fresh, '--workers', '1']),
    undefined,
    '--workers: the command sizes its pool',
  );
  assert.equal(earlyIndexPool(['--store', fresh, '--mode', 'skip']), undefined, 'skip parses nothing');
  assert.equal(earlyIndexPool(['--store', fresh, '-h']), undefined);
  const pool = earlyIndexPool(['--repo', 'x', `--store=${fresh}`, '--json']);
  assert.ok(pool, 'a fresh store folder is a cold index');
  try {
    // the workers are real parse workers
    const pkg = path.join(tempDir(), 'pkg');
    mkdirSync(pkg);
    writeFileSync(path.join(pkg, 'm.py'), 'import os\n\nclass A(os.PathLike):\n    pass\n');
    const [out] = await pool.parse([{ path: path.join(pkg, 'm.py'), blob: null }]);
    assert.equal(out.problem, null);
    assert.match(out.json ?? '', /"PathLike"/);
  } finally {
    await pool.close();
  }
});

test('a cold index that stops on bad usage exits 2 and creates no store (bin.ts closes the early workers)', () => {
  const fresh = path.join(tempDir(), 'store');
  const bin = path.join(DIST, 'cli', 'bin.js');
  const t = Date.now();
  const r = spawnSync(process.execPath, [bin, 'index', '--mode', 'sometimes', '--store', fresh], {
    encoding: 'utf8',
    timeout: 60000,
  });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--mode must be missing, force or skip/);
  assert.ok(Date.now() - t < 30000);
  assert.equal(existsSync(path.join(fresh, 'index.sqlite')), false);
});
