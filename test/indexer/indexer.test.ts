// The incremental indexing policy on small synthetic trees: content addressing across
// repos, missing/force/skip modes, deleted files, stale facts versions, and problems
// (too large, invalid UTF-8, syntax errors, symlink loops, binder-independent).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, symlinkSync, writeFileSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { IndexStore } from '../../src/store/store.js';
import { indexRepos, stats } from '../../src/indexer/indexer.js';
import type { IndexOptions, Lister } from '../../src/indexer/indexer.js';
import { ParsePool } from '../../src/indexer/pool.js';
import { formatIndexReport, formatStats } from '../../src/indexer/report.js';
import { FACTS_VERSION } from '../../src/parse/types.js';
import { tempDir } from '../helpers.js';
import { ageTree, checkout, listTree, pyPackage, writeTree } from './corpus.js';

const pool = new ParsePool(2);
test.after(() => pool.close());
// the real listing and module naming of src/repos
const opts = (o: IndexOptions = {}): IndexOptions => ({ pool, ...o });

/** Every file row points at stored, current facts. */
function assertConsistent(store: IndexStore): void {
  assert.equal(store.integrityCheck(), 'ok');
  const orphans = store.db
    .prepare(
      'SELECT f.repo, f.path FROM files f LEFT JOIN facts x ON x.blob = f.blob WHERE x.blob IS NULL OR x.version != ?',
    )
    .all(FACTS_VERSION);
  assert.deepEqual(orphans, []);
}

test('identical content in two repos is parsed once', async () => {
  const a = tempDir(),
    b = tempDir();
  const files = pyPackage(3);
  writeTree(a, files);
  writeTree(b, { ...files, 'pkg/extra.py': 'X = 1\n' });
  const store = IndexStore.open(tempDir());
  const r = await indexRepos(store, [checkout('a', a), checkout('b', b)], opts());
  assert.equal(r.files, 9);
  assert.equal(r.parsed, 5, '4 shared contents + extra.py');
  assert.equal(r.reused, 4);
  assert.deepEqual(
    r.repos.map((x) => [x.name, x.parsed, x.reused]),
    [
      ['a', 4, 0],
      ['b', 1, 4],
    ],
  );
  // a third repo with the same content later: nothing to parse
  const c = tempDir();
  writeTree(c, files);
  const r2 = await indexRepos(store, [checkout('c', c)], opts());
  assert.equal(r2.parsed, 0);
  assert.equal(store.listFiles('c').length, 4);
  assert.equal(store.listFiles('a')[1].module, 'pkg.m0');
  await assert.rejects(indexRepos(store, [checkout('a', a), checkout('a', b)], opts()), /given twice/);
  assertConsistent(store);
  store.close();
});

test('missing mode re-parses exactly the changed file; stat cache skips unchanged files', async () => {
  const root = tempDir();
  writeTree(root, pyPackage(6));
  ageTree(root);
  const store = IndexStore.open(tempDir());
  const co = [checkout('r', root)];
  const r1 = await indexRepos(store, co, opts());
  assert.equal(r1.parsed, 7);
  assert.equal(r1.hashed, 7);

  const r2 = await indexRepos(store, co, opts());
  assert.equal(r2.parsed, 0);
  assert.equal(r2.hashed, 0, 'unchanged size+mtime: not even read');

  const before = store.listFiles('r').find((f) => f.path === 'pkg/m3.py')!.blob;
  const f = path.join(root, 'pkg/m3.py');
  writeFileSync(f, 'import os\n\ndef changed():\n    return os.sep\n');
  utimesSync(f, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  const r3 = await indexRepos(store, co, opts());
  assert.equal(r3.hashed, 1);
  assert.equal(r3.parsed, 1);
  const after = store.listFiles('r').find((x) => x.path === 'pkg/m3.py')!.blob;
  assert.notEqual(after, before);
  assert.deepEqual(
    store.getFacts(after)?.statements.flatMap((s) => s.binds),
    ['os', 'changed'],
  );

  // touched but identical content: read again, not parsed
  utimesSync(f, new Date(), new Date(Date.now() - 30_000));
  const r4 = await indexRepos(store, co, opts());
  assert.equal(r4.hashed, 1);
  assert.equal(r4.parsed, 0);
  assertConsistent(store);
  store.close();
});

test('force re-parses every distinct content; skip parses none but records files', async () => {
  const root = tempDir();
  writeTree(root, { ...pyPackage(4), 'pkg/copy.py': pyPackage(4)['pkg/m1.py'] });
  const store = IndexStore.open(tempDir());
  const co = [checkout('r', root)];
  await indexRepos(store, co, opts());
  const rf = await indexRepos(store, co, opts({ mode: 'force' }));
  assert.equal(rf.files, 6);
  assert.equal(rf.parsed, 5, 'copy.py has the content of m1.py');

  writeTree(root, { 'pkg/new.py': 'Y = 2\n' });
  const rs = await indexRepos(store, co, opts({ mode: 'skip' }));
  assert.equal(rs.parsed, 0);
  assert.equal(rs.files, 7);
  const blob = store.listFiles('r').find((f) => f.path === 'pkg/new.py')!.blob;
  assert.equal(store.hasFacts(blob), false);
  const rm = await indexRepos(store, co, opts());
  assert.equal(rm.parsed, 1, 'the next missing run parses what skip left');
  assertConsistent(store);
  store.close();
});

test('deleted files disappear from the index; facts stay until gc', async () => {
  const root = tempDir();
  writeTree(root, pyPackage(3));
  const store = IndexStore.open(tempDir());
  const co = [checkout('r', root)];
  await indexRepos(store, co, opts());
  const gone = store.listFiles('r').find((f) => f.path === 'pkg/m2.py')!.blob;
  rmSync(path.join(root, 'pkg/m2.py'));
  const r = await indexRepos(store, co, opts());
  assert.equal(r.files, 3);
  assert.deepEqual(
    store.listFiles('r').map((f) => f.path),
    ['pkg/__init__.py', 'pkg/m0.py', 'pkg/m1.py'],
  );
  assert.equal(store.hasFacts(gone), true);
  assert.equal(store.gc(), 1);
  assert.equal(store.hasFacts(gone), false);
  store.close();
});

test('facts of an older FACTS_VERSION are re-parsed', async () => {
  const root = tempDir();
  writeTree(root, pyPackage(2));
  ageTree(root);
  const store = IndexStore.open(tempDir());
  const co = [checkout('r', root)];
  await indexRepos(store, co, opts());
  store.db.prepare('UPDATE facts SET version = ? WHERE blob = ?').run(FACTS_VERSION - 1, store.listFiles('r')[1].blob);
  const r = await indexRepos(store, co, opts());
  assert.equal(r.parsed, 1);
  assertConsistent(store);
  store.close();
});

test('problems: > 2 MB file, invalid UTF-8, syntax error, symlink loop; none fatal', async () => {
  const root = tempDir();
  const big = '# padding\n'.repeat(220_000); // 2.2 MB
  writeTree(root, {
    'pkg/__init__.py': '',
    'pkg/big.py': big,
    'pkg/latin.py': Buffer.concat([Buffer.from('A = 1\nS = "caf'), Buffer.from([0xe9]), Buffer.from('"\nB = 2\n')]),
    'pkg/broken.py': 'X = 1\n\ndef f(:\n    pass\n\nclass C:\n    pass\n',
    'pkg/ok.py': 'Z = 3\n',
  });
  symlinkSync('..', path.join(root, 'pkg/loop')); // pkg/loop/pkg/loop/...
  const store = IndexStore.open(tempDir());
  const r = await indexRepos(store, [checkout('r', root)], opts());
  const kinds = Object.fromEntries(r.problems.map((p) => [p.path, p.kind]));
  assert.deepEqual(kinds, {
    'pkg/big.py': 'too-large',
    'pkg/latin.py': 'invalid-utf8',
    'pkg/broken.py': 'syntax-error',
    'pkg/loop': 'symlink-loop',
  });
  assert.match(r.problems.find((p) => p.kind === 'syntax-error')!.message, /^line 3:/);
  assert.match(r.problems.find((p) => p.kind === 'invalid-utf8')!.message, /line 2/);
  assert.deepEqual(
    store.listFiles('r').map((f) => f.path),
    ['pkg/__init__.py', 'pkg/broken.py', 'pkg/latin.py', 'pkg/ok.py'],
  );
  assert.equal(r.parseErrors, 1);
  // indexed as far as possible
  const latin = store.getFacts(store.listFiles('r').find((f) => f.path === 'pkg/latin.py')!.blob)!;
  assert.deepEqual(
    latin.statements.flatMap((s) => s.binds),
    ['A', 'S', 'B'],
  );
  const broken = store.getFacts(store.listFiles('r').find((f) => f.path === 'pkg/broken.py')!.blob)!;
  assert.ok(
    broken.statements.some((s) => s.binds.includes('C')),
    'the class after the syntax error is still bound',
  );
  // problems are stored, and reported again when the content is reused
  assert.equal(store.listProblems('r').length, 4);
  const r2 = await indexRepos(store, [checkout('r', root)], opts());
  assert.equal(r2.parsed, 0);
  assert.equal(r2.problems.length, 4);
  const st = stats(store);
  assert.equal(st.files, 4);
  assert.equal(st.parseErrors, 1);
  assert.deepEqual(st.problemsByKind, { 'invalid-utf8': 1, 'symlink-loop': 1, 'syntax-error': 1, 'too-large': 1 });
  assert.equal(st.lastRun?.mode, 'missing');
  assert.match(formatStats(st), /4 files, .* 1 files with syntax errors/);
  assert.match(formatIndexReport(r2), /4 problems:\n {2}r\/pkg\/big.py: too-large/);
  assertConsistent(store);
  store.close();
});

test('a listed file that cannot be read (self-referencing symlink, vanished) is a problem', async () => {
  const root = tempDir();
  writeTree(root, { 'a.py': 'A = 1\n' });
  symlinkSync('self.py', path.join(root, 'self.py'));
  // a lister that reports the link and a vanished file without checking them
  const lister: Lister = async (r, o) => {
    const l = await listTree(r, o);
    return {
      files: [
        ...l.files.filter((f) => f.path === 'a.py'),
        { path: 'self.py', size: 10, mtimeMs: 1 },
        { path: 'gone.py', size: 5, mtimeMs: 1 },
      ],
      problems: [],
    };
  };
  const store = IndexStore.open(tempDir());
  const r = await indexRepos(store, [checkout('r', root)], opts({ list: lister }));
  assert.deepEqual(
    r.problems.map((p) => [p.path, p.kind]),
    [
      ['gone.py', 'read-error'],
      ['self.py', 'symlink-loop'],
    ],
  );
  assert.deepEqual(
    store.listFiles('r').map((f) => f.path),
    ['a.py'],
  );
  store.close();
});
