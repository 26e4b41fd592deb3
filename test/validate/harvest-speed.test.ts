// Two cold harvests of one repository on machines of different speed choose the same
// steps and witnesses (issue 28; src/validate/README.md "Witnesses"), in the real sandbox
// with a fixture repository (test/fixtures/harvest-speed) whose models' constructions
// spend forty times more CPU time in the second harvest: a phase's budget is counted in
// steps (harvest.ts PHASE_STEPS), not in the CPU time they took (which ended the slower
// harvest steps earlier), and its CPU backstop is not reached.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ValidatorPool } from '../../src/validate/index.js';
import { harvestRepo, type HarvestResult } from '../../src/validate/witness/harvest.js';
import { sandboxFixture } from '../helpers.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);

test('a harvest on a machine many times slower runs the same steps and records the same witnesses', {
  skip: skip ?? false,
}, async () => {
  const dir = sandboxFixture('harvest-speed');
  const srepo = path.join(dir, 'srepo');
  const machine = path.join(dir, 'machine');
  // three steps of the builders' phase; a CPU backstop of 3 s that the slow steps would
  // reach within the ten entry points, not within three
  const budget = { repoSteps: 3, repoMs: 3000, repoWallMs: 600000, entryMs: 10000, docsMs: 0 };
  const harvest = async (slowdown: number): Promise<HarvestResult> => {
    writeFileSync(path.join(machine, 'machine_speed.py'), `SLOWDOWN = ${slowdown}\n`);
    // a new pool (a new process): its zygote imports machine_speed afresh
    const pool = await ValidatorPool.start({ workers: 1 });
    try {
      return await harvestRepo(pool, {
        repo: 'srepo',
        sysPath: [srepo, machine],
        ownRoots: 1,
        modules: ['spkg', 'spkg.zoo'],
        zygoteModule: 'spkg',
        ...budget,
      });
    } finally {
      await pool.close();
    }
  };
  // about 0.02 s of spinning a model, then 0.8 s
  const fast = await harvest(10);
  const slow = await harvest(400);
  const steps = (h: HarvestResult) => h.entries.map((e) => [e.entry, e.built, e.forward, e.covered.sort()]);
  assert.ok(
    slow.entries[0].cpuMs! > 4 * fast.entries[0].cpuMs!,
    `the slow machine's step took more CPU time: ${slow.entries[0].cpuMs} against ${fast.entries[0].cpuMs} ms`,
  );
  assert.ok(
    fast.entries.every((e) => e.forward),
    JSON.stringify(fast.entries.map((e) => [e.entry, e.error, e.forwardError])),
  );
  assert.deepEqual(steps(slow), steps(fast));
  assert.equal(fast.entries.length, 3, JSON.stringify(steps(fast)));
  assert.deepEqual(slow.witnesses, fast.witnesses);
  for (const h of [fast, slow]) {
    assert.equal(h.stopped, 'steps');
    assert.equal(h.reproducible, true);
  }
});
