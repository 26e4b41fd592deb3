// A block's time limit is CPU time, in the real sandbox: a block that computes within its
// limit passes however loaded the machine is and however long it waits (processes spin
// beside it, and it waits after computing: its wall time passes the limit); a block that only waits is not charged for the wait; a block
// that waits forever is ended by the wall-clock backstop; one that computes forever by
// its CPU time, and the error says which.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import os from 'node:os';
import { ValidatorPool } from '../../src/validate/index.js';
import { cannotValidate, request } from './common.js';

const skip = await cannotValidate(true);

/** Processes that compute without end, one per core and more, so that a block beside
 *  them gets well under a core: its wall time is several times its CPU time. */
function hogs(n: number): ChildProcess[] {
  return Array.from({ length: n }, () =>
    spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore', detached: false }),
  );
}

describe('time limit in CPU time', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  before(async () => {
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => {
    await pool.close();
  });

  it('passes a block that computes within its limit on a loaded machine', async () => {
    const busy = hogs(2 * os.availableParallelism());
    try {
      // 1.5 s of CPU against a limit of 3 s, beside spinning processes (how much they
      // slow the block depends on the scheduler: the sandbox is a session of its own),
      // then a 2 s wait: its wall time passes 3 s on any machine
      const r = await pool.validate(request('cputime', 'computes.py', { timeoutMs: 3000 }));
      assert.equal(r.category, null, `${r.stage} ${r.error}`);
      assert.equal(r.stages.forward, 'pass');
      assert.ok(r.ms > 3000, `its wall time (${r.ms} ms) passed the limit, so the limit was not the wall clock`);
    } finally {
      for (const h of busy) h.kill('SIGKILL');
    }
  });

  it('does not charge a block for waiting', async () => {
    const r = await pool.validate(request('cputime', 'waits.py', { timeoutMs: 1000 }));
    assert.equal(r.category, null, `${r.stage} ${r.error}`);
    assert.equal(r.stages.forward, 'pass');
    assert.ok(r.ms >= 2000, `took ${r.ms} ms`);
  });

  it('ends a block that computes without end by its CPU time, and one that waits without end by the backstop', async () => {
    const spin = await pool.validate(request('fail', 'timeout.py', { timeoutMs: 1500 }));
    assert.equal(spin.category, 'timeout');
    assert.match(spin.error ?? '', /used its 1.5 s of CPU time/);
    // the backstop: 6 x the limit + 10 s of wall clock
    const t0 = performance.now();
    const wait = await pool.validate(request('cputime', 'waits_forever.py', { timeoutMs: 200 }));
    const took = performance.now() - t0;
    assert.equal(wait.category, 'timeout');
    assert.match(wait.error ?? '', /wall-clock backstop/);
    assert.ok(took >= 11000 && took < 40000, `ended after ${took} ms`);
  });
});
