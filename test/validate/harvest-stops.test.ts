// Harvest steps that were run again although nothing they read had changed (issue 27;
// src/validate/README.md "Witnesses"), in the real sandbox with two fixture repositories
// (test/fixtures/harvest-stops): a step whose model's eval() raises still answers (the
// constructions it recorded, what it read) and is stored, as does one whose error escapes
// the harness's handling (SystemExit); a test that waits without
// computing is ended by its wall-clock bound (6x + 10 s of its CPU timer) and the tests
// after it run; a test step whose CPU timer (the backstop of its counted work) ran out is
// marked stopped by it. After an edit of
// a file no step read, every step is reused; after an edit of another repository's file
// the harvest never read, the stored harvest stays current; after an edit of one it read,
// the step that read it runs again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { currentHarvest, libraryModules, repoWitnesses } from '../../src/validate/witness/index.js';
import type { HarvestResult } from '../../src/validate/witness/harvest.js';
import { sandboxFixture } from '../helpers.js';
import { cannotRunTests } from './common.js';

const skip = await cannotRunTests();

const ran = (h: HarvestResult) =>
  h.entries
    .filter((e) => !e.reused)
    .map((e) => e.entry)
    .sort();

const LOOPER = 'hspkg.models.build_looper';
const SEALED = 'hspkg.models.build_sealed';
const TESTS = 'test:tests/test_waits.py';

test('a step whose eval() fails answers and is reused; a waiting test is stopped by the wall clock; edits of files no step read re-run nothing', {
  skip: skip ?? false,
}, async () => {
  const dir = sandboxFixture('harvest-stops');
  const hsrepo = path.join(dir, 'hsrepo');
  const other = path.join(dir, 'otherrepo');
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  // one worker: the steps run one after another
  let pool = await ValidatorPool.start({ workers: 1 });
  // after an edit, a new pool (a new nnrag process): a running zygote keeps the modules
  // it imported before the edit
  const reindex = async () => {
    await pool.close();
    pool = await ValidatorPool.start({ workers: 1 });
    const spec = (name: string, p: string, priority: number) => ({
      name,
      url: null,
      path: p,
      priority,
      paths: [],
      description: null,
      packageRoots: null,
    });
    await api.index(ws, { repos: [spec('hsrepo', hsrepo, 1), spec('otherrepo', other, 2)] });
    api.discover(ws);
  };
  // a step's budget of 4 s (its timers at 6 s of CPU time, 46 s of wall clock), a test's
  // 1 s (1.5 s, 19 s)
  const harvest = async () => {
    const got = await repoWitnesses(ws.store, pool, 'hsrepo', {
      modules: libraryModules(ws.corpus(), 'hsrepo'),
      corpus: ws.corpus(),
      entryMs: 4000,
      testMs: 1000,
    });
    assert.ok(got && !got.cached);
    return got.result;
  };
  const entry = (h: HarvestResult, name: string) => {
    const e = h.entries.find((x) => x.entry === name);
    assert.ok(e, `${name} in ${JSON.stringify(h.entries.map((x) => x.entry))}`);
    return e;
  };
  try {
    await reindex();
    const cold = await harvest();
    assert.deepEqual(ran(cold), [LOOPER, SEALED, TESTS], JSON.stringify(cold.entries));

    // eval() raised (Looper.train takes a loader): the step answered, with the
    // constructions it recorded, and its answer is stored with what it read
    const looper = entry(cold, LOOPER);
    assert.equal(looper.built, true, JSON.stringify(looper));
    assert.match(looper.forwardError ?? '', /^TypeError/, JSON.stringify(looper));
    assert.ok((looper.cpuMs ?? 4000) < 4000, `charged what it spent, not its whole budget: ${looper.cpuMs}`);
    assert.deepEqual(cold.witnesses['hspkg.models.Looper']?.[0]?.args, [4], JSON.stringify(cold.witnesses));
    const stored = Object.values(cold.runs ?? {}).find((r) => (r.harvest as { entry?: string }).entry === LOOPER);
    assert.ok(stored, 'the step whose eval() failed is stored');
    assert.ok(
      stored.files.some(([f]) => f === path.join(other, 'otherpkg', 'used.py')),
      stored.files.map(([f]) => f).join(),
    );

    // an error that escaped the harness's handling (SystemExit from the model's
    // parameters()): the step answered all the same, with what it read, and is stored
    const sealed = entry(cold, SEALED);
    assert.match(sealed.error ?? '', /SystemExit/, JSON.stringify(sealed));
    assert.ok((sealed.cpuMs ?? 4000) < 4000, `charged what it spent, not its whole budget: ${sealed.cpuMs}`);
    assert.ok(
      Object.values(cold.runs ?? {}).some((r) =>
        (r.harvest as { entry?: string; error?: string }).error?.includes('SystemExit'),
      ),
      'the step whose error escaped is stored',
    );

    // the test that sleeps 60 s was ended by its wall-clock bound (19 s), the test after
    // it ran (Gate called), and the step's budget ran out in the CPU-bound tests
    const tests = entry(cold, `${TESTS}`);
    assert.ok(tests.ms < 58000, `the step did not wait for the sleeping test: ${tests.ms} ms`);
    assert.ok(tests.tests?.stopped.includes('tests/test_waits.py::test_waits'), JSON.stringify(tests.tests));
    assert.ok(cold.witnesses['hspkg.blocks.Gate']?.[0]?.inputs, JSON.stringify(cold.witnesses['hspkg.blocks.Gate']));
    assert.ok((tests.tests?.unrun ?? 0) > 0, JSON.stringify(tests.tests));
    // the spinning tests call nothing the step's count sees: its CPU timer, the backstop
    // (1.5 x the budget), ended it, and the step says so
    assert.equal(tests.stopped, 'time', 'a step whose budget left tests unrun is stopped by its budget');
    assert.equal(tests.backstop, 'cpu', JSON.stringify(tests));

    // an edit of a file of the repository that no step read: every step is reused
    appendFileSync(path.join(hsrepo, 'hspkg', 'unrelated.py'), '\n# edited\n');
    await reindex();
    assert.equal(currentHarvest(ws.store, 'hsrepo', pool.harvestEnvId), null, 'an own file changed: harvested again');
    const edited = await harvest();
    assert.deepEqual(ran(edited), [], JSON.stringify(edited.entries));
    assert.equal(edited.reusedRuns, 3);
    assert.deepEqual(edited.witnesses, cold.witnesses);

    // an edit of another repository's file that the harvest never read: still current
    appendFileSync(path.join(other, 'otherpkg', 'unused.py'), '\n# edited\n');
    await reindex();
    const current = currentHarvest(ws.store, 'hsrepo', pool.harvestEnvId);
    assert.ok(current, "another repository's file that no step read changed: the stored harvest is current");
    assert.deepEqual(current.witnesses, edited.witnesses);

    // an edit of the file it read there (the width): not current, and only the step that
    // read it runs again
    writeFileSync(
      path.join(other, 'otherpkg', 'used.py'),
      '"""A width read at import time by hspkg.models."""\n\nWIDTH = 5\n',
    );
    await reindex();
    assert.equal(currentHarvest(ws.store, 'hsrepo', pool.harvestEnvId), null);
    const wider = await harvest();
    assert.ok(ran(wider).includes(LOOPER), JSON.stringify(wider.entries));
    assert.deepEqual(wider.witnesses['hspkg.models.Looper']?.[0]?.args, [5]);
  } finally {
    await pool.close();
    ws.close();
  }
});
