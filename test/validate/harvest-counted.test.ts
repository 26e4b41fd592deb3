// A test step stops by its counted work (issue 28, "Same answers"; src/validate/README.md
// "Tests and documented examples"), in the real sandbox with a fixture repository
// (test/fixtures/harvest-counted): its budget is counted in torch operations and Python
// calls (harvest_docs.StepMeter), not in CPU seconds, so two harvests of the same
// repository stop the session at the same test, run the same tests and record the same
// witnesses, also when a thread beside the tests makes the step's process spend its CPU
// time faster (as on a slower machine, where a CPU timer fired at an earlier test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { libraryModules, repoWitnesses } from '../../src/validate/witness/index.js';
import type { EntryReport, HarvestResult } from '../../src/validate/witness/harvest.js';
import { sandboxFixture } from '../helpers.js';
import { cannotRunTests } from './common.js';

const skip = await cannotRunTests();

test('a test step stops at the same test by its counted work, with or without a busy thread beside it', {
  skip: skip ?? false,
}, async (t) => {
  const dir = sandboxFixture('harvest-counted');
  const repo = path.join(dir, 'crepo');
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const pool = await ValidatorPool.start({ workers: 1 });
  const harvest = async (entryMs: number): Promise<HarvestResult> => {
    const got = await repoWitnesses(ws.store, pool, 'crepo', {
      modules: libraryModules(ws.corpus(), 'crepo'),
      corpus: ws.corpus(),
      entryMs,
      force: true,
      noRunReuse: true,
    });
    assert.ok(got && !got.cached);
    return got.result;
  };
  const session = (h: HarvestResult): EntryReport => {
    const e = h.entries.find((x) => x.entry.startsWith('test:tests/test_layers.py'));
    assert.ok(e?.tests, JSON.stringify(h.entries));
    return e;
  };
  try {
    await api.index(ws, {
      repos: [{ name: 'crepo', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    api.discover(ws);
    // the whole session within a large budget: its counted work, in seconds of budget
    const whole = session(await harvest(120000));
    assert.equal(whole.stopped, undefined, JSON.stringify(whole));
    assert.equal(whole.tests!.passed, 12, JSON.stringify(whole));
    const work = whole.workSeconds ?? 0;
    assert.ok(work > 2, `the session counts a few seconds of work: ${JSON.stringify(whole)}`);
    // a budget of 55 % of it: the session stops by its work in a middle test
    const budget = Math.round(work * 550);
    const quiet = await harvest(budget);
    writeFileSync(path.join(repo, 'busy.flag'), '');
    const busy = await harvest(budget);
    rmSync(path.join(repo, 'busy.flag'));
    const [q, b] = [session(quiet), session(busy)];
    for (const s of [q, b]) {
      assert.equal(s.stopped, 'work', JSON.stringify(s));
      assert.equal(s.backstop, undefined, JSON.stringify(s));
      assert.ok((s.tests!.unrun ?? 0) > 0, JSON.stringify(s));
      assert.ok(s.tests!.passed > 2 && s.tests!.passed < 11, JSON.stringify(s));
    }
    t.diagnostic(
      `budget ${budget} ms; quiet: ${q.cpuMs} ms of CPU, busy: ${b.cpuMs} ms; ${q.tests!.passed} tests passed, ${q.tests!.unrun} unrun, work ${q.workSeconds} s`,
    );
    // the busy thread spent CPU time in the step's process: a CPU budget would have
    // ended it at an earlier test
    assert.ok((b.cpuMs ?? 0) > (q.cpuMs ?? 0) * 1.15, `busy ${b.cpuMs} ms, quiet ${q.cpuMs} ms of CPU`);
    // the same tests ran, the same one stopped the session, the same witnesses
    assert.deepEqual(b.tests, q.tests);
    assert.equal(b.workSeconds, q.workSeconds);
    assert.deepEqual(busy.witnesses, quiet.witnesses);
    assert.deepEqual(b.covered, q.covered);
  } finally {
    await pool.close();
    ws.close();
  }
});
