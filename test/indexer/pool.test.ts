// The parse worker pool: results per file with the blob id of the bytes read, unreadable
// files reported, and a file that exhausts a worker's heap limit parsed again in a
// worker without one instead of failing the run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ParsePool } from '../../src/indexer/pool.js';
import { gitBlobId } from '../../src/indexer/source.js';
import { FACTS_VERSION } from '../../src/parse/types.js';
import type { FileFacts } from '../../src/parse/types.js';
import { tempDir } from '../helpers.js';
import { pyModule, writeTree } from './corpus.js';

test('a batch comes back in order, with blob ids and facts JSON; a missing file is a read error', async () => {
  const root = tempDir();
  writeTree(root, { 'a.py': pyModule(1), 'b.py': 'import os\nX = os.sep\n', 'bad.py': 'def f(:\n  pass\n' });
  const pool = new ParsePool(2);
  try {
    const items = ['a.py', 'b.py', 'bad.py', 'nope.py'].map((p) => ({ path: path.join(root, p), blob: null }));
    const out = await pool.parse(items);
    assert.deepEqual(
      out.map((o) => path.basename(o.path)),
      ['a.py', 'b.py', 'bad.py', 'nope.py'],
    );
    assert.equal(out[1].blob, gitBlobId(readFileSync(path.join(root, 'b.py'))));
    const b = JSON.parse(out[1].json!) as FileFacts;
    assert.equal(b.version, FACTS_VERSION);
    assert.deepEqual(
      b.statements.map((s) => s.binds),
      [['os'], ['X']],
    );
    assert.equal(out[2].errors > 0, true);
    assert.match(out[2].firstError!, /^line 1:/);
    assert.equal(out[3].readFailed, true);
    assert.equal(out[3].problem?.kind, 'read-error');
    assert.equal(pool.parsedFiles, 4);
    assert.equal(pool.initMs.length > 0, true);
  } finally {
    await pool.close();
  }
});

test('a file that exhausts the worker heap limit is parsed again without the limit', async () => {
  const root = tempDir();
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < 250_000; i++) {
    lines.push(
      `def f${i}(a, b=[x * 2 for x in range(3)], *c, **d):`,
      `    return g${i}(a, b.c.d[e], {k: v for k, v in d.items()}, lambda z: z + q${i})`,
    );
  }
  writeTree(root, { 'dense.py': lines.join('\n') + '\n', 'small.py': 'Y = 1\n' });
  const pool = new ParsePool(1, { oldMB: 8 });
  try {
    const out = await pool.parse([
      { path: path.join(root, 'small.py'), blob: null },
      { path: path.join(root, 'dense.py'), blob: null },
    ]);
    assert.equal(out.length, 2);
    assert.equal(out[1].problem, null);
    const facts = JSON.parse(out[1].json!) as FileFacts;
    assert.equal(facts.statements.length, lines.length / 2);
    assert.ok(out[0].json, 'the other file of the crashed batch is parsed on its own');
  } finally {
    await pool.close();
  }
});

test('a batch that runs past the timeout is abandoned; its files are retried alone and reported', async () => {
  const root = tempDir();
  const lines: string[] = [];
  for (let i = 0; i < 3000; i++)
    lines.push(`def f${i}(a):`, `    return g(a, [x for x in a if x], {k: v for k, v in a})`);
  writeTree(root, { 'slow.py': lines.join('\n') + '\n' });
  const pool = new ParsePool(1, { timeoutMs: 1 });
  try {
    const [o] = await pool.parse([{ path: path.join(root, 'slow.py'), blob: 'b' }]);
    assert.equal(o.json, null);
    assert.equal(o.problem?.kind, 'parse-crash');
    assert.match(o.problem!.message, /longer than/);
    assert.equal(o.blob, 'b');
  } finally {
    await pool.close();
  }
});
