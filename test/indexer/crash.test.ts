// Crash safety and concurrency of indexing: a child process killed with SIGKILL in the
// middle of a run leaves a consistent store that the next run completes; two processes
// indexing into the same store at once both succeed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { IndexStore } from '../../src/store/store.js';
import { indexRepos } from '../../src/indexer/indexer.js';
import { FACTS_VERSION } from '../../src/parse/types.js';
import { tempDir } from '../helpers.js';
import { checkout, pyModule, pyPackage, writeTree } from './corpus.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'child-index.js');
const N = 400; // modules of ~100 lines: a run of a second or more

function runChild(storeDir: string, root: string) {
  const child = spawn(process.execPath, [CHILD, storeDir, root, '2'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '',
    err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise<{ code: number | null; signal: string | null; out: string; err: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, out, err })),
  );
  return { child, done };
}

function factsCount(storeDir: string): number {
  try {
    const db = new Database(path.join(storeDir, 'index.sqlite'), {
      readonly: true,
      fileMustExist: true,
      timeout: 5000,
    });
    try {
      return db.prepare('SELECT COUNT(*) FROM facts').pluck().get() as number;
    } finally {
      db.close();
    }
  } catch {
    return 0; // not created yet
  }
}

function assertComplete(store: IndexStore, files: number): void {
  assertConsistent(store);
  assert.equal(store.listFiles('r').length, files);
}

function assertConsistent(store: IndexStore): void {
  assert.equal(store.integrityCheck(), 'ok');
  const orphans = store.db
    .prepare(
      'SELECT COUNT(*) FROM files f LEFT JOIN facts x ON x.blob = f.blob WHERE x.blob IS NULL OR x.version != ? OR x.data IS NULL',
    )
    .pluck()
    .get(FACTS_VERSION);
  assert.equal(orphans, 0, 'every file row has facts');
}

test('SIGKILL during indexing, then a rerun completes and the store is consistent', async () => {
  const root = tempDir();
  writeTree(root, pyPackage(N, 100));
  const storeDir = path.join(tempDir(), 'store');
  const { child, done } = runChild(storeDir, root);
  // kill as soon as some facts are committed, i.e. in the middle of the parse phase
  const t0 = Date.now();
  while (factsCount(storeDir) === 0 && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 10));
  child.kill('SIGKILL');
  const res = await done;
  assert.equal(res.signal, 'SIGKILL', `child finished before the kill: ${res.out} ${res.err}`);

  const store = IndexStore.open(storeDir);
  assert.equal(store.integrityCheck(), 'ok');
  const committed = factsCount(storeDir);
  assert.ok(committed > 0 && committed < N + 1, `partial facts: ${committed}`);
  assert.equal(store.listFiles('r').length, 0, 'no file rows of an unfinished run');
  const interrupted = store.db.prepare('SELECT COUNT(*) FROM runs WHERE finished IS NULL').pluck().get();
  assert.equal(interrupted, 1);

  const r = await indexRepos(store, [checkout('r', root)], { workers: 2 });
  assert.equal(r.files, N + 1);
  assert.equal(r.parsed, N + 1 - committed, 'facts committed before the kill are reused');
  assertComplete(store, N + 1);
  store.close();
});

test('SIGKILL at random moments of runs over a changing tree always leaves a consistent store', async () => {
  const root = tempDir();
  writeTree(root, pyPackage(200, 100, 20_000));
  const storeDir = path.join(tempDir(), 'store');
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 3; round++) {
    // change some files between runs so every run has parsing to do
    const changed: Record<string, string> = {};
    for (let i = 0; i < 40; i++)
      changed[`pkg/m${Math.floor(rand() * 200)}.py`] = pyModule(50_000 + round * 100 + i, 100);
    writeTree(root, changed);
    const { child, done } = runChild(storeDir, root);
    await new Promise((r) => setTimeout(r, 150 + rand() * 1200));
    child.kill('SIGKILL');
    await done;
    const store = IndexStore.open(storeDir);
    assertConsistent(store);
    store.close();
  }
  const store = IndexStore.open(storeDir);
  await indexRepos(store, [checkout('r', root)], { workers: 2 });
  assertComplete(store, 201);
  store.close();
});

test('two processes indexing the same store at once both succeed', async () => {
  const root = tempDir();
  writeTree(root, pyPackage(200, 80, 10_000));
  const storeDir = path.join(tempDir(), 'store');
  const a = runChild(storeDir, root);
  const b = runChild(storeDir, root);
  const [ra, rb] = await Promise.all([a.done, b.done]);
  assert.equal(ra.code, 0, ra.err);
  assert.equal(rb.code, 0, rb.err);
  assert.equal(JSON.parse(ra.out).files, 201);
  assert.equal(JSON.parse(rb.out).files, 201);
  const store = IndexStore.open(storeDir);
  assertComplete(store, 201);
  assert.equal(store.db.prepare('SELECT COUNT(*) FROM runs WHERE finished IS NOT NULL').pluck().get(), 2);
  store.close();
});
