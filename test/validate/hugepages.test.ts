// A worker that has forked many candidates holds its heap in transparent huge pages
// (worker.py, zygote.collapse_anonymous after COLLAPSE_AFTER forks), so each later fork
// copies, and each candidate's exit drops, a fraction of the page-table entries; the
// candidates still run forked from it, in the real sandbox, with the same limits. The
// fixture's block reports the MiB of huge pages its process inherited as its output's
// length. Skipped where the kernel has no MADV_COLLAPSE (Linux < 6.1) or huge pages are off.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { ValidatorPool } from '../../src/validate/index.js';
import { cannotValidate, request } from './common.js';

/** Why this kernel cannot collapse memory into huge pages, or null. */
function noCollapse(): string | null {
  const [major, minor] = os.release().split('.').map(Number);
  if (major < 6 || (major === 6 && minor < 1)) return `kernel ${os.release()} has no MADV_COLLAPSE`;
  try {
    if (/\[never\]/.test(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8')))
      return 'transparent huge pages are disabled';
  } catch {
    return 'no transparent huge pages';
  }
  return null;
}

const skip = (await cannotValidate(true)) ?? noCollapse();
// worker.py COLLAPSE_AFTER
const COLLAPSE_AFTER = 32;

describe('huge pages in a worker that forks many candidates', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  before(async () => {
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => pool?.close());

  it('collapses the heap once, and later candidates fork from huge pages', async () => {
    const huge: number[] = [];
    let collapsed = 0;
    for (let i = 0; i <= COLLAPSE_AFTER; i++) {
      const r = await pool.validate({ ...request('hugepages', 'probe.py'), id: `hugepages#${i}` });
      assert.equal(r.stages.forward, 'pass', `${r.stage} ${r.error}`);
      huge.push(r.output_shapes?.[0]?.[0] ?? -1);
      if (r.outside?.['huge pages']) collapsed++;
    }
    // once, before the COLLAPSE_AFTER-th fork
    assert.equal(collapsed, 1);
    // torch's heap (~300 MB of anonymous memory) is in huge pages from then on
    assert.ok(huge[COLLAPSE_AFTER] - huge[0] >= 64, `MiB in huge pages, request by request: ${huge.join(' ')}`);
  });
});
