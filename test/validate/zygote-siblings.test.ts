// A repository's zygote imports a sibling module its package's __init__ does not import
// once, for all of that module's requests (zygote.py zygote_extend), instead of each
// request importing it in its own child; verdicts stay those of a child that imports it.
// Real sandbox, real torch; the fixture's sibling module costs a second of CPU at import.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixture } from '../helpers.js';
import { ValidatorPool, type ValidationRequest, type ValidationResult } from '../../src/validate/index.js';
import { cannotValidate } from './common.js';
import { originalRequests, passesWithOriginal } from './zygote-fixture.js';

const skip = await cannotValidate(true);
const dir = fixture('validate', 'sibling');

describe('zygote: sibling modules imported once', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  let reqs: Map<string, ValidationRequest>;
  before(async () => {
    reqs = await originalRequests(dir, 'sibling', [
      'sibpkg.base.Base',
      'sibpkg.slow.Scaled',
      'sibpkg.slow.Shifted',
      'sibpkg.threaded.Gate',
      'sibpkg.broken.Half',
    ]);
    // one worker: every request meets the same zygote
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => pool?.close());

  it('imports the sibling module once in the zygote, not in each request', async () => {
    // the zygote imports the package with its first request's module
    const first = await pool.validate(reqs.get('sibpkg.base.Base')!);
    passesWithOriginal(first);
    const runs: ValidationResult[] = [];
    for (const target of ['sibpkg.slow.Scaled', 'sibpkg.slow.Shifted', 'sibpkg.slow.Scaled'])
      runs.push(await pool.validate({ ...reqs.get(target)!, id: `${target}#${runs.length}` }));
    for (const r of runs) passesWithOriginal(r);
    // the second of CPU at import is paid once, by the zygote, and said by the request
    // that waited for it; no stage imports the module again
    const waited = runs.filter((r) => r.zygoteMs !== undefined);
    assert.equal(waited.length, 1, JSON.stringify(runs.map((r) => r.zygoteMs)));
    assert.equal(waited[0].zygoteSibling, true);
    assert.ok(waited[0].zygoteMs! >= 900, `zygote import ${waited[0].zygoteMs} ms`);
    for (const r of runs) {
      const inStages = (r.timings.namespace ?? 0) + (r.timings.equivalence ?? 0);
      assert.ok(inStages < 700, `${r.id}: namespace + equivalence ${inStages} ms`);
    }
  });

  it('validates outside the zygote a sibling whose import fails, with its error', async () => {
    const r = await pool.validate(reqs.get('sibpkg.broken.Half')!);
    assert.equal(r.stages.namespace, 'skip');
    assert.match(r.namespace?.reason ?? '', /original does not import: RuntimeError: sibling import refused/);
    assert.equal(r.stages.forward, 'pass');
    // the zygote is kept: the slow module's requests still fork from it
    const again = await pool.validate({ ...reqs.get('sibpkg.slow.Shifted')!, id: 'again' });
    passesWithOriginal(again);
    assert.equal(again.zygoteMs, undefined);
    assert.ok((again.timings.namespace ?? 0) < 700, `namespace ${again.timings.namespace} ms`);
  });

  it('drops a zygote that a sibling import left with a thread, and validates that block outside', async () => {
    const r = await pool.validate(reqs.get('sibpkg.threaded.Gate')!);
    passesWithOriginal(r);
    // a new zygote serves the package's next request
    const next = await pool.validate({ ...reqs.get('sibpkg.base.Base')!, id: 'next' });
    passesWithOriginal(next);
    assert.ok(next.zygoteMs !== undefined, 'a new zygote imported the package');
  });
});
