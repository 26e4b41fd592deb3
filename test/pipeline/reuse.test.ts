// Warm runs (issue 27): extract + validate run again with nothing changed reads every
// block's stored result (no worker starts, the record says it was reused and why); after
// one file changes, only the blocks whose closure read that file are validated again, and
// the verdicts are those of the first run; a comment that moves no code finds the stored
// validations of the copy. Real validation in the sandbox (skipped where
// this machine has no torch or bubblewrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { KV_KEYS } from '../../src/store/kv.js';
import type { CostTable } from '../../src/util/costs.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { fixtureWorkspace } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const skip = await cannotValidate(true);

test('a warm run reuses every block; one changed file re-validates only the blocks that read it', {
  skip: skip ?? false,
}, async () => {
  const { ws, repo, spec } = fixtureWorkspace('reuse', 'rrepo');
  const start = ValidatorPool.start;
  let starts = 0;
  ValidatorPool.start = (...a: Parameters<typeof start>) => {
    starts++;
    return start.apply(ValidatorPool, a);
  };
  const run = () => extractAndValidate(ws, ['rpkg.mlp.Mlp', 'rpkg.norm.Norm'], { pool: { workers: 1 } });
  const verdicts = (rs: api.BlockRecord[]) =>
    rs.map((r) => ({ id: r.id, ok: r.ok, profile: r.emission.profile, stages: r.validation?.stages }));
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    const cold = await run();
    assert.equal(starts, 1);
    assert.deepEqual(
      cold.map((r) => r.reuse?.reused),
      [false, false],
    );
    for (const r of cold) assert.ok(r.ok && r.validation?.stages.forward === 'pass', JSON.stringify(r.validation));
    const mlpFiles = cold[0].inputs!.files.map(([, p]) => p);
    assert.ok(mlpFiles.includes('rpkg/act.py') && mlpFiles.includes('rpkg/mlp.py'), mlpFiles.join(' '));
    assert.ok(!cold[1].inputs!.files.some(([, p]) => p === 'rpkg/act.py'), 'Norm does not read act.py');

    // nothing changed: every block read from the store, no worker started
    const warm = await run();
    assert.equal(starts, 1, 'no pool started for a warm run');
    assert.deepEqual(
      warm.map((r) => r.reuse?.reused),
      [true, true],
    );
    assert.deepEqual(verdicts(warm), verdicts(cold));
    const costs = JSON.parse(ws.store.getKV(KV_KEYS.costsLast)!) as CostTable;
    assert.equal(
      costs.rows.filter((r) => r.phase === 'blocks reused').reduce((a, r) => a + r.count, 0),
      2,
    );
    assert.ok(!costs.rows.some((r) => r.phase.startsWith('emission')), 'no emission in a warm run');

    // act.py changes (a comment: same verdicts): Mlp is validated again, Norm is not
    appendFileSync(path.join(repo, 'rpkg', 'act.py'), '\n# changed\n');
    await api.index(ws, { repos: [spec], workers: 1 });
    const touched = await run();
    assert.equal(touched[0].reuse?.reused, false);
    assert.match(touched[0].reuse!.why, /rpkg\/act\.py/);
    assert.equal(touched[1].reuse?.reused, true);
    assert.deepEqual(verdicts(touched), verdicts(cold));
    // the comment leaves act.py's code where it was: Mlp's copy, validated again, finds
    // the stored results of its validations (their key reads the closure's files by code)
    const validations = () =>
      (JSON.parse(ws.store.getKV(KV_KEYS.costsLast)!) as CostTable).rows.filter((r) => r.phase.startsWith('validate '));
    const afterComment = validations();
    assert.ok(
      afterComment.some((r) => r.phase.endsWith('(stored result)')),
      JSON.stringify(afterComment),
    );
    assert.ok(!afterComment.some((r) => r.phase.endsWith(' forward')), JSON.stringify(afterComment));

    // a comment line above the code moves it (its lines change): Mlp's copy is validated
    const act = path.join(repo, 'rpkg', 'act.py');
    writeFileSync(act, `# moved\n${readFileSync(act, 'utf8')}`);
    await api.index(ws, { repos: [spec], workers: 1 });
    const moved = await run();
    assert.equal(moved[0].reuse?.reused, false);
    assert.ok(
      validations().some((r) => r.phase.endsWith(' forward')),
      JSON.stringify(validations()),
    );
    assert.deepEqual(verdicts(moved), verdicts(cold));

    // --force validates everything again
    const forced = await extractAndValidate(ws, ['rpkg.mlp.Mlp', 'rpkg.norm.Norm'], {
      pool: { workers: 1 },
      force: true,
    });
    assert.deepEqual(
      forced.map((r) => r.reuse?.reused),
      [false, false],
    );
    // one pool per run that validates, however many blocks asked for it at once (a second
    // start left its workers running and the process never exited)
    assert.equal(starts, 4);
  } finally {
    ValidatorPool.start = start;
    ws.close();
  }
});
