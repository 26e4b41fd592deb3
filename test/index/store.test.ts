// IndexStore: schema creation and migration, reopening, facts keyed by blob id,
// repo/file replacement, blocks, kv, gc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { IndexStore, registerMigration, latestSchemaVersion } from '../../src/index/store.js';
import type { FactsRow, RepoRow } from '../../src/index/store.js';
import { FACTS_VERSION } from '../../src/parse/types.js';
import type { FileFacts } from '../../src/parse/types.js';
import { NnragError } from '../../src/util/errors.js';
import { tempDir } from '../helpers.js';

const facts = (lines: number): FileFacts => ({
  version: FACTS_VERSION, lines, errors: [], futureAnnotations: false, all: null, statements: [], classes: [], dynamic: [],
});

const row = (blob: string, f: FileFacts | null, version = FACTS_VERSION): FactsRow => ({
  blob, version, json: f && JSON.stringify(f), size: 10, lines: f?.lines ?? 0, errors: 0, firstError: null,
  parseMs: 1, encoding: 'utf-8', problem: f ? null : JSON.stringify({ kind: 'binder-error', message: 'boom' }),
});

const repo = (name: string): RepoRow => ({
  name, url: null, root: `/src/${name}`, revision: 'abc', local: true, priority: 0, packageRoots: [''], indexedAt: null,
});

test('open creates the schema in WAL mode and reopen keeps the data', () => {
  const dir = path.join(tempDir(), 'store');
  const s = IndexStore.open(dir);
  assert.ok(existsSync(path.join(dir, 'index.sqlite')));
  assert.equal(s.schemaVersion, latestSchemaVersion());
  assert.equal(s.db.pragma('journal_mode', { simple: true }), 'wal');
  s.putFacts([row('b1', facts(3))]);
  s.setKV('k', 'v');
  s.close();
  const s2 = IndexStore.open(dir);
  assert.equal(s2.getFacts('b1')?.lines, 3);
  assert.equal(s2.getKV('k'), 'v');
  assert.equal(s2.integrityCheck(), 'ok');
  s2.close();
});

test('a registered migration is applied once, in order, on the next open', () => {
  const dir = tempDir();
  IndexStore.open(dir).close();
  const v = latestSchemaVersion() + 1;
  let runs = 0;
  registerMigration({ version: v, name: 'test table', up: (db) => { runs++; db.exec('CREATE TABLE extra(x)'); } });
  assert.throws(() => registerMigration({ version: v, name: 'dup', up: () => {} }));
  const s = IndexStore.open(dir);
  assert.equal(s.schemaVersion, v);
  assert.deepEqual(s.appliedMigrations().slice(-1), [v]);
  s.db.prepare('INSERT INTO extra VALUES (1)').run();
  s.close();
  IndexStore.open(dir).close();
  assert.equal(runs, 1);
});

test('migrations unknown to this process are tolerated unless breaking', () => {
  const dir = tempDir();
  IndexStore.open(dir).close();
  // another nnrag component (not loaded here) added an additive migration
  const db = new Database(path.join(dir, 'index.sqlite'));
  db.exec("CREATE TABLE other(x); INSERT INTO schema_migrations VALUES (900000, 'other feature', 0, 'now')");
  db.pragma('user_version = 900000');
  db.close();
  const s = IndexStore.open(dir);
  assert.ok(s.appliedMigrations().includes(900000));
  assert.ok(s.appliedMigrations().includes(1));
  s.close();
  const db2 = new Database(path.join(dir, 'index.sqlite'));
  db2.exec("INSERT INTO schema_migrations VALUES (900001, 'changes files', 1, 'now')");
  db2.close();
  assert.throws(() => IndexStore.open(dir), (e) => e instanceof NnragError && /newer/.test(e.message));
});

test('a migration registered later is applied even when the store has higher versions', () => {
  const dir = tempDir();
  IndexStore.open(dir).close();
  const db2 = new Database(path.join(dir, 'index.sqlite'));
  db2.exec("INSERT INTO schema_migrations VALUES (800000, 'x', 0, 'now')");
  db2.pragma('user_version = 800000');
  db2.close();
  registerMigration({ version: 700000, name: 'late', up: (d) => d.exec('CREATE TABLE late(y)') });
  const s = IndexStore.open(dir);
  s.db.prepare('INSERT INTO late VALUES (1)').run();
  assert.equal(s.schemaVersion, 800000);
  s.close();
});

test('a store path that cannot be a folder is an NnragError', () => {
  const f = path.join(tempDir(), 'file');
  writeFileSync(f, 'x');
  assert.throws(() => IndexStore.open(f), (e) => e instanceof NnragError && /cannot open index store/.test(e.message));
});

test('facts: version check, failed contents, loadAllFacts of referenced blobs, gc', () => {
  const s = IndexStore.open(tempDir());
  s.putFacts([row('a', facts(1)), row('b', facts(2)), row('old', facts(3), FACTS_VERSION - 1), row('bad', null)]);
  assert.equal(s.hasFacts('a'), true);
  assert.equal(s.hasFacts('old'), false, 'an older FACTS_VERSION is not current');
  assert.equal(s.hasFacts('bad'), true, 'a binder failure is stored, not retried every run');
  assert.equal(s.getFacts('bad'), null);
  assert.equal(s.hasFacts('nope'), false);

  s.replaceRepo(repo('r'), [
    { repo: 'r', path: 'x.py', module: 'x', blob: 'a', size: 10, mtimeMs: 5 },
    { repo: 'r', path: 'y.py', module: 'y', blob: 'bad', size: 10, mtimeMs: 5 },
  ], [{ repo: 'r', path: 'y.py', kind: 'binder-error', message: 'boom' }]);
  const all = s.loadAllFacts();
  assert.deepEqual([...all.keys()], ['a'], 'only facts some file refers to, and only real facts');
  assert.equal(all.get('a')?.lines, 1);
  const lazy = s.loadFactsLazy();
  assert.deepEqual([...lazy.keys()], ['a']);
  assert.equal(lazy.get('a')?.lines, 1);
  assert.equal(lazy.get('a'), lazy.get('a'), 'parsed once, then cached');
  assert.equal(lazy.get('bad'), undefined);
  assert.deepEqual(s.loadCorpus().files, [
    { repo: 'r', path: 'x.py', module: 'x', blob: 'a' },
    { repo: 'r', path: 'y.py', module: 'y', blob: 'bad' },
  ]);
  assert.equal(s.listProblems('r').length, 1);

  assert.equal(s.gc(), 2, 'b and old are unreferenced');
  assert.equal(s.hasFacts('b'), false);
  assert.equal(s.hasFacts('a'), true);
  s.close();
});

test('replaceRepo replaces files and problems of that repo only', () => {
  const s = IndexStore.open(tempDir());
  const f = (r: string, p: string) => ({ repo: r, path: p, module: null, blob: 'z', size: 1, mtimeMs: 1 });
  s.replaceRepo(repo('r1'), [f('r1', 'a.py'), f('r1', 'b.py')], []);
  s.replaceRepo(repo('r2'), [f('r2', 'a.py')], []);
  s.replaceRepo(repo('r1'), [f('r1', 'b.py')], [{ repo: 'r1', path: 'c.py', kind: 'too-large', message: 'big' }]);
  assert.deepEqual(s.listFiles().map((x) => `${x.repo}:${x.path}`), ['r1:b.py', 'r2:a.py']);
  assert.deepEqual(s.listProblems().map((p) => p.kind), ['too-large']);
  assert.deepEqual(s.listRepos().map((r) => r.name), ['r1', 'r2']);
  assert.deepEqual(s.getRepo('r1')?.packageRoots, ['']);
  s.removeRepo('r1');
  assert.deepEqual(s.listFiles().map((x) => x.repo), ['r2']);
  s.close();
});

test('blocks: replaceBlocks per repo, listBlocks', () => {
  const s = IndexStore.open(tempDir());
  const b = (id: string, r: string) => ({ id, name: id, module: 'm', repo: r, path: 'm.py', line: 3, bases: ['nn.Module'] });
  s.replaceBlocks('r1', [b('A', 'r1'), { ...b('B', 'r1'), data: { abstract: false } }]);
  s.replaceBlocks('r2', [b('C', 'r2')]);
  s.replaceBlocks('r1', [b('A', 'r1')]);
  assert.deepEqual(s.listBlocks().map((x) => x.id), ['A', 'C']);
  assert.deepEqual(s.listBlocks('r2')[0].bases, ['nn.Module']);
  s.close();
});
