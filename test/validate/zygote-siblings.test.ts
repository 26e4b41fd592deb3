// A repository's zygote imports a sibling module its package's __init__ does not import
// once, for all of that module's requests (zygote.py zygote_extend), instead of each
// request importing it in its own child; verdicts stay those of a child that imports it.
// Real sandbox, real torch; the fixture's sibling module costs a second of CPU at import.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { ValidatorPool, type ValidationRequest, type ValidationResult } from '../../src/validate/index.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);
const dir = fixture('validate', 'sibling');

describe('zygote: sibling modules imported once', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  const reqs = new Map<string, ValidationRequest>();
  before(async () => {
    const ws = api.Workspace.open(path.join(tempDir('nnrag-sib-'), 'store'));
    try {
      await api.index(ws, {
        repos: [
          { name: 'sibling', url: null, path: dir, priority: 1, paths: [], description: null, packageRoots: [''] },
        ],
        workers: 1,
      });
      for (const target of [
        'sibpkg.base.Base',
        'sibpkg.slow.Scaled',
        'sibpkg.slow.Shifted',
        'sibpkg.threaded.Gate',
        'sibpkg.broken.Half',
      ]) {
        const { text, namespace, record } = api.extractText(ws, target);
        assert.ok(text && namespace, record.error);
        const dot = target.lastIndexOf('.');
        reqs.set(target, {
          id: target,
          source: text,
          className: target.slice(dot + 1),
          original: { module: target.slice(0, dot), className: target.slice(dot + 1), sysPath: [dir] },
          namespace,
          requiredStages: ['import', 'instantiate', 'forward', 'equivalence'],
        });
      }
    } finally {
      ws.close();
    }
    // one worker: every request meets the same zygote
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => pool?.close());

  const passes = (r: ValidationResult) => {
    assert.equal(r.ok, true, `${r.id}: ${r.stage} ${r.error}`);
    assert.equal(r.stages.namespace, 'pass', `${r.id}: ${JSON.stringify(r.namespace)}`);
    assert.equal(r.stages.equivalence, 'pass', `${r.id}: ${JSON.stringify(r.equivalence)}`);
  };

  it('imports the sibling module once in the zygote, not in each request', async () => {
    // the zygote imports the package with its first request's module
    const first = await pool.validate(reqs.get('sibpkg.base.Base')!);
    passes(first);
    const runs: ValidationResult[] = [];
    for (const target of ['sibpkg.slow.Scaled', 'sibpkg.slow.Shifted', 'sibpkg.slow.Scaled'])
      runs.push(await pool.validate({ ...reqs.get(target)!, id: `${target}#${runs.length}` }));
    for (const r of runs) passes(r);
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
    passes(again);
    assert.equal(again.zygoteMs, undefined);
    assert.ok((again.timings.namespace ?? 0) < 700, `namespace ${again.timings.namespace} ms`);
  });

  it('drops a zygote that a sibling import left with a thread, and validates that block outside', async () => {
    const r = await pool.validate(reqs.get('sibpkg.threaded.Gate')!);
    passes(r);
    // a new zygote serves the package's next request
    const next = await pool.validate({ ...reqs.get('sibpkg.base.Base')!, id: 'next' });
    passes(next);
    assert.ok(next.zygoteMs !== undefined, 'a new zygote imported the package');
  });
});
