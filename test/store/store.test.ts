// IndexStore: schema creation and migration, reopening, facts keyed by blob id,
// repo/file replacement, blocks, kv, gc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { IndexStore, latestSchemaVersion } from '../../src/store/store.js';
import { KV_KEYS } from '../../src/store/kv.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { blockEnvironments, getExtraction, listExtractions, putExtraction } from '../../src/store/records.js';
import { getSpec } from '../../src/store/specs.js';
import type { FactsRow, IndexedRepo } from '../../src/store/store.js';
import { FACTS_VERSION } from '../../src/parse/types.js';
import type { FileFacts } from '../../src/parse/types.js';
import { NnragError } from '../../src/util/errors.js';
import { tempDir } from '../helpers.js';

const facts = (lines: number): FileFacts => ({
  version: FACTS_VERSION,
  lines,
  errors: [],
  futureAnnotations: false,
  all: null,
  statements: [],
  classes: [],
  dynamic: [],
});

const row = (blob: string, f: FileFacts | null, version = FACTS_VERSION): FactsRow => ({
  blob,
  version,
  json: f && JSON.stringify(f),
  size: 10,
  lines: f?.lines ?? 0,
  errors: 0,
  firstError: null,
  parseMs: 1,
  encoding: 'utf-8',
  problem: f ? null : JSON.stringify({ kind: 'binder-error', message: 'boom' }),
});

const repo = (name: string): IndexedRepo => ({
  name,
  url: null,
  root: `/src/${name}`,
  revision: 'abc',
  local: true,
  priority: 0,
  packageRoots: [''],
  indexedAt: null,
});

test('open creates the schema in WAL mode and reopen keeps the data', () => {
  const dir = path.join(tempDir(), 'store');
  const s = IndexStore.open(dir);
  assert.ok(existsSync(path.join(dir, 'index.sqlite')));
  assert.equal(s.schemaVersion, latestSchemaVersion());
  assert.equal(s.db.pragma('journal_mode', { simple: true }), 'wal');
  s.putFacts([row('b1', facts(3))]);
  s.setKV(KV_KEYS.libraryLast, 'v');
  s.close();
  const s2 = IndexStore.open(dir);
  assert.equal(s2.getFacts('b1')?.lines, 3);
  assert.equal(s2.getKV(KV_KEYS.libraryLast), 'v');
  assert.equal(s2.integrityCheck(), 'ok');
  s2.close();
});

test('one static list of migrations, strictly increasing, all applied on every open', () => {
  const versions = MIGRATIONS.map((m) => m.version);
  assert.deepEqual(
    versions,
    [...versions].sort((a, b) => a - b),
  );
  assert.equal(new Set(versions).size, versions.length);
  const s = IndexStore.open(tempDir());
  assert.deepEqual(s.appliedMigrations(), versions);
  assert.equal(s.schemaVersion, latestSchemaVersion());
  s.close();
});

// The DDL of migrations 1, 2 and 9 exactly as earlier nnrag builds applied them when a
// command had not imported the library and search modules (their migrations were
// registered at module load): such a store lacks the specs and search tables.
const OLD_SCHEMA = `
  CREATE TABLE repos(name TEXT PRIMARY KEY, url TEXT, root TEXT NOT NULL, revision TEXT, local INTEGER NOT NULL DEFAULT 0,
    priority INTEGER NOT NULL DEFAULT 0, package_roots TEXT NOT NULL DEFAULT '[]', indexed_at TEXT);
  CREATE TABLE files(repo TEXT NOT NULL, path TEXT NOT NULL, module TEXT, blob TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ms REAL NOT NULL, PRIMARY KEY(repo, path)) WITHOUT ROWID;
  CREATE INDEX files_blob ON files(blob);
  CREATE TABLE facts(blob TEXT PRIMARY KEY, version INTEGER NOT NULL, data TEXT, size INTEGER NOT NULL DEFAULT 0,
    lines INTEGER NOT NULL DEFAULT 0, errors INTEGER NOT NULL DEFAULT 0, first_error TEXT, parse_ms REAL NOT NULL DEFAULT 0,
    encoding TEXT, problem TEXT);
  CREATE TABLE problems(repo TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);
  CREATE INDEX problems_repo ON problems(repo);
  CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT NOT NULL, finished TEXT, mode TEXT NOT NULL,
    repos TEXT NOT NULL DEFAULT '[]', stats TEXT, timings TEXT);
  CREATE TABLE blocks(id TEXT PRIMARY KEY, name TEXT NOT NULL, module TEXT NOT NULL, repo TEXT NOT NULL, path TEXT NOT NULL,
    line INTEGER NOT NULL, bases TEXT NOT NULL DEFAULT '[]', data TEXT);
  CREATE INDEX blocks_repo ON blocks(repo);
  CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT);
  CREATE TABLE extractions(id TEXT PRIMARY KEY, hash TEXT NOT NULL, ok INTEGER NOT NULL, status TEXT NOT NULL,
    lines INTEGER NOT NULL, record TEXT NOT NULL, text TEXT NOT NULL, updated TEXT NOT NULL);
  CREATE TABLE validations(hash TEXT NOT NULL, env TEXT NOT NULL, result TEXT NOT NULL, PRIMARY KEY(hash, env));
  CREATE TABLE support_files(repo TEXT NOT NULL, path TEXT NOT NULL, module TEXT NOT NULL, blob TEXT NOT NULL,
    PRIMARY KEY(repo, path)) WITHOUT ROWID;
  CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking INTEGER NOT NULL DEFAULT 0, applied_at TEXT NOT NULL);
  INSERT INTO schema_migrations VALUES (1, 'initial', 0, 'then'), (2, 'records', 0, 'then'), (9, 'support', 0, 'then');
  PRAGMA user_version = 9;
`;

test('a store written by the previous schema opens, gains the missing tables and keeps its rows', () => {
  const dir = tempDir();
  const db = new Database(path.join(dir, 'index.sqlite'));
  db.exec(OLD_SCHEMA);
  const record = {
    id: 'pkg.m.Block',
    file: 'x.py',
    ok: true,
    lines: 3,
    diagnostics: [],
    interned: ['pkg.m'],
    externs: ['torch'],
    ms: 1,
  };
  db.prepare('INSERT INTO extractions VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    'pkg.m.Block',
    'h',
    1,
    'extracted',
    3,
    JSON.stringify(record),
    'class Block: pass\n',
    'then',
  );
  db.prepare("INSERT INTO kv VALUES ('dedup:last', '{}')").run();
  db.prepare("INSERT INTO repos(name, root) VALUES ('r', '/src/r')").run();
  db.close();
  const s = IndexStore.open(dir);
  assert.deepEqual(
    s.appliedMigrations(),
    MIGRATIONS.map((m) => m.version),
    'the migrations the old process did not know are applied',
  );
  const [e] = listExtractions(s);
  assert.equal(e.id, 'pkg.m.Block');
  assert.equal(e.text, 'class Block: pass\n');
  assert.deepEqual(e.record.externs, ['torch']);
  assert.equal(s.getKV(KV_KEYS.dedupLast), '{}');
  assert.equal(s.getRepo('r')?.root, '/src/r');
  assert.equal(getSpec(s, 'pkg.m.Block'), null, 'the specs table exists (empty)');
  putExtraction(s, { ...e, status: 'validated' });
  assert.equal(listExtractions(s)[0].status, 'validated');
  s.close();
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
  assert.throws(
    () => IndexStore.open(dir),
    (e) => e instanceof NnragError && /newer/.test(e.message),
  );
});

test('a store with newer unknown versions still gets the known migrations it lacks', () => {
  const dir = tempDir();
  IndexStore.open(dir).close();
  const db2 = new Database(path.join(dir, 'index.sqlite'));
  db2.exec(
    'DROP TABLE search_sigs; DROP TABLE search_docs; DROP TABLE search_fts; DELETE FROM schema_migrations WHERE version = 4',
  );
  db2.exec("INSERT INTO schema_migrations VALUES (800000, 'x', 0, 'now')");
  db2.pragma('user_version = 800000');
  db2.close();
  const s = IndexStore.open(dir);
  assert.ok(s.appliedMigrations().includes(4));
  assert.equal(s.schemaVersion, 800000);
  s.close();
});

test('a store path that cannot be a folder is an NnragError', () => {
  const f = path.join(tempDir(), 'file');
  writeFileSync(f, 'x');
  assert.throws(
    () => IndexStore.open(f),
    (e) => e instanceof NnragError && /cannot open index store/.test(e.message),
  );
});

test('facts: version check, failed contents, loadAllFacts of referenced blobs, gc', () => {
  const s = IndexStore.open(tempDir());
  s.putFacts([row('a', facts(1)), row('b', facts(2)), row('old', facts(3), FACTS_VERSION - 1), row('bad', null)]);
  assert.equal(s.hasFacts('a'), true);
  assert.equal(s.hasFacts('old'), false, 'an older FACTS_VERSION is not current');
  assert.equal(s.hasFacts('bad'), true, 'a binder failure is stored, not retried every run');
  assert.equal(s.getFacts('bad'), null);
  assert.equal(s.hasFacts('nope'), false);

  s.replaceRepo(
    repo('r'),
    [
      { repo: 'r', path: 'x.py', module: 'x', blob: 'a', size: 10, mtimeMs: 5 },
      { repo: 'r', path: 'y.py', module: 'y', blob: 'bad', size: 10, mtimeMs: 5 },
    ],
    [{ repo: 'r', path: 'y.py', kind: 'binder-error', message: 'boom' }],
  );
  const all = s.loadAllFacts();
  assert.deepEqual([...all.keys()], ['a'], 'only facts some file refers to, and only real facts');
  assert.equal(all.get('a')?.lines, 1);
  const lazy = s.loadFactsLazy();
  assert.deepEqual([...lazy.keys()], ['a']);
  assert.equal(lazy.get('a')?.lines, 1);
  assert.equal(lazy.get('a'), lazy.get('a'), 'parsed once, then cached');
  assert.equal(lazy.get('bad'), undefined);
  assert.deepEqual(s.indexContents().files, [
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
  assert.deepEqual(
    s.listFiles().map((x) => `${x.repo}:${x.path}`),
    ['r1:b.py', 'r2:a.py'],
  );
  assert.deepEqual(
    s.listProblems().map((p) => p.kind),
    ['too-large'],
  );
  assert.deepEqual(
    s.listRepos().map((r) => r.name),
    ['r1', 'r2'],
  );
  assert.deepEqual(s.getRepo('r1')?.packageRoots, ['']);
  s.removeRepo('r1');
  assert.deepEqual(
    s.listFiles().map((x) => x.repo),
    ['r2'],
  );
  s.close();
});

test('blocks: replaceBlocks per repo, listBlocks', () => {
  const s = IndexStore.open(tempDir());
  const b = (id: string, r: string) => ({
    id,
    name: id,
    module: 'm',
    repo: r,
    path: 'm.py',
    line: 3,
    bases: ['nn.Module'],
  });
  s.replaceBlocks('r1', [b('A', 'r1'), { ...b('B', 'r1'), data: { abstract: false } }]);
  s.replaceBlocks('r2', [b('C', 'r2')]);
  s.replaceBlocks('r1', [b('A', 'r1')]);
  assert.deepEqual(
    s.listBlocks().map((x) => x.id),
    ['A', 'C'],
  );
  assert.deepEqual(s.listBlocks('r2')[0].bases, ['nn.Module']);
  s.close();
});

test("migration 11: a store from before per-environment verdicts lists each block's one validation as its environment", () => {
  const dir = tempDir();
  IndexStore.open(dir).close();
  const db2 = new Database(path.join(dir, 'index.sqlite'));
  // the store as version 10 left it, with one validated and one unvalidated block
  db2.exec('DROP TABLE block_environments; DELETE FROM schema_migrations WHERE version = 11');
  db2.pragma('user_version = 10');
  const rec = (id: string, v: object | null) => JSON.stringify({ id, ok: !!v, ...(v ? { validation: v } : {}) });
  const ins = db2.prepare(
    "INSERT INTO extractions(id, hash, ok, status, lines, record, text, updated) VALUES (?, 'h', ?, ?, 1, ?, 'x', 'now')",
  );
  ins.run('a.A', 1, 'validated', rec('a.A', { envId: 'e1e1e1e1e1e1e1e1', python: '/usr/bin/python3', stages: {} }));
  ins.run('b.B', 0, 'extracted', rec('b.B', null));
  db2.close();
  const s = IndexStore.open(dir);
  assert.deepEqual(blockEnvironments(s), [{ id: 'a.A', env: 'e1e1e1e1e1e1e1e1', label: '/usr/bin/python3', ok: true }]);
  assert.deepEqual(Object.keys(getExtraction(s, 'a.A')!.record.validations!), ['e1e1e1e1e1e1e1e1']);
  s.close();
});
