// The run steps of a harvest import the repository's installed dependencies once, in
// their zygote, not each in its own child (issue 27; src/validate/README.md
// "Witnesses"), in the real sandbox with a fixture repository
// (test/fixtures/harvest-preload): its list step names the modules outside the
// repository that the repository's own code imports by absolute name (not its own
// modules, not an import inside a function nothing called), and the model module,
// imported in a run step, finds them imported already. A test file's values drawn at
// collection are the same in two harvests (two processes, whose torch seeded its default
// generator differently at start-up): the step seeds the global generators first. The
// tests run with their asserts as written (pytest's rewriting compiled every test file and
// plugin module afresh in every step).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ValidatorPool } from '../../src/validate/index.js';
import { harvestRepo } from '../../src/validate/witness/harvest.js';
import { sandboxFixture } from '../helpers.js';
import { cannotRunTests, cannotValidate } from './common.js';

const skip = await cannotValidate(true);
const skipTests = await cannotRunTests();

test("a harvest's run steps fork from a zygote that imported the repository's installed imports", {
  skip: skip ?? false,
}, async () => {
  const dir = sandboxFixture('harvest-preload');
  const prepo = path.join(dir, 'prepo');
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    const h = await harvestRepo(pool, {
      repo: 'prepo',
      sysPath: [prepo],
      ownRoots: 1,
      modules: ['ppkg', 'ppkg.layers', 'ppkg.models'],
      zygoteModule: 'ppkg',
      entryMs: 20000,
      docsMs: 0,
    });
    // `from email.mime import text` binds email.mime and imports email.mime.text; torch
    // and sys were imported before the repository's modules; mailbox never was
    assert.deepEqual(h.preload, ['email.mime', 'email.mime.text', 'wave'], JSON.stringify(h));
    const net = h.entries.find((e) => e.entry === 'ppkg.models.Net');
    assert.ok(net?.forward, JSON.stringify(h.entries));
    // Net built Block(8): `wave` was in sys.modules before ppkg.models imported it
    assert.deepEqual(h.witnesses['ppkg.layers.Block']?.[0]?.args, [8], JSON.stringify(h.witnesses));
  } finally {
    await pool.close();
  }
});

test('values a test file draws at collection are the same in two harvests', { skip: skipTests ?? false }, async () => {
  const dir = sandboxFixture('harvest-preload');
  const prepo = path.join(dir, 'prepo');
  const harvest = async () => {
    // a new pool: new processes, their own start-up seeds
    const pool = await ValidatorPool.start({ workers: 1 });
    try {
      return await harvestRepo(pool, {
        repo: 'prepo',
        sysPath: [prepo],
        ownRoots: 1,
        modules: ['ppkg', 'ppkg.layers', 'ppkg.models'],
        zygoteModule: 'ppkg',
        repoRoot: prepo,
        entryMs: 20000,
        testMs: 20000,
      });
    } finally {
      await pool.close();
    }
  };
  const a = await harvest();
  const b = await harvest();
  const head = (h: typeof a) => h.witnesses['ppkg.layers.Head'];
  assert.ok(head(a)?.[0]?.inputs, JSON.stringify(a.entries));
  assert.deepEqual(head(b), head(a));
  // the tests ran as written: pytest did not rewrite their asserts (--assert=plain)
  assert.deepEqual(
    a.witnesses['ppkg.layers.Tail']?.map((w) => w.args),
    [[6]],
    JSON.stringify(a.witnesses['ppkg.layers.Tail']),
  );
});
