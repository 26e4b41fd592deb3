// A worker's zygote serves every top-level package of its repository roots: a request
// whose module belongs to another package of the same roots (utils.loss beside models.net)
// imports it into the zygote as a sibling module (worker.py zygote_of_roots) instead of a
// second zygote importing the repository's common modules again. And the usage line's
// time is reported apart (`usageMs`): it runs between forward and equivalence, in no
// stage's timing. Real sandbox, real torch; the fixture's common module costs a second of
// CPU at import, its loss block half a second to build.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { ValidatorPool, type ValidationRequest, type ValidationResult } from '../../src/validate/index.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);
const dir = fixture('validate', 'twotops');

describe('zygote: one per repository roots', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  const reqs = new Map<string, ValidationRequest>();
  before(async () => {
    const ws = api.Workspace.open(path.join(tempDir('nnrag-tops-'), 'store'));
    try {
      await api.index(ws, {
        repos: [
          { name: 'twotops', url: null, path: dir, priority: 1, paths: [], description: null, packageRoots: [''] },
        ],
        workers: 1,
      });
      for (const target of ['models.net.Net', 'utils.loss.Smooth']) {
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
    // one worker: both requests meet the same worker
    pool = await ValidatorPool.start({ workers: 1, roots: [dir] });
  });
  after(async () => pool?.close());

  const passes = (r: ValidationResult) => {
    assert.equal(r.ok, true, `${r.id}: ${r.stage} ${r.error}`);
    assert.equal(r.stages.namespace, 'pass', `${r.id}: ${JSON.stringify(r.namespace)}`);
    assert.equal(r.stages.equivalence, 'pass', `${r.id}: ${JSON.stringify(r.equivalence)}`);
  };

  it("imports another package's module into the zygote of the same roots", async () => {
    const first = await pool.validate(reqs.get('models.net.Net')!);
    passes(first);
    // the zygote's import (models.net, utils.general's second of CPU) is the first's
    assert.ok(first.zygoteMs !== undefined && first.zygoteMs >= 900, `first import ${first.zygoteMs} ms`);
    const second = await pool.validate(reqs.get('utils.loss.Smooth')!);
    passes(second);
    // utils.loss imported into that zygote: utils.general is not imported a second time
    assert.equal(second.zygoteSibling, true, JSON.stringify({ ms: second.zygoteMs }));
    assert.ok(second.zygoteMs! < 900, `sibling import ${second.zygoteMs} ms`);
    // and again: nothing more to import
    const third = await pool.validate({ ...reqs.get('utils.loss.Smooth')!, id: 'utils.loss.Smooth#2' });
    passes(third);
    assert.equal(third.zygoteMs, undefined);
  });

  it('reports the usage line apart from the stages', async () => {
    const r = await pool.validate({ ...reqs.get('utils.loss.Smooth')!, id: 'utils.loss.Smooth#usage' });
    passes(r);
    assert.equal(r.usageCheck, 'ran', r.usageSkipped);
    // the line builds the block again: its half second of CPU, outside every stage
    assert.ok(r.usageMs !== undefined && r.usageMs >= 450, `usage line ${r.usageMs} ms`);
    const staged = Object.values(r.timings).reduce((a, b) => a + (b ?? 0), 0);
    assert.ok(staged + r.usageMs <= r.ms, `stages ${staged} + usage ${r.usageMs} > request ${r.ms} ms`);
  });
});
