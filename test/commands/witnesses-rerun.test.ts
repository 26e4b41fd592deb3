// `nnrag witnesses` run again with nothing changed reads the stored harvest without
// starting a validation worker (each imports torch: seconds): the environment id comes
// from probing the interpreter and what its workers reported when they last started.
// A change of the environment's probe (another interpreter) is a different environment:
// its workers start again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../../src/nnrag.js';
import { witnesses } from '../../src/commands/witnesses.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { fixtureWorkspace } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const skip = await cannotValidate(true);

test('a re-run of the harvest with nothing changed starts no worker', { skip: skip ?? false }, async () => {
  const { ws, spec } = fixtureWorkspace('guarded', 'grepo');
  const start = ValidatorPool.start;
  let starts = 0;
  ValidatorPool.start = (...a: Parameters<typeof start>) => {
    starts++;
    return start.apply(ValidatorPool, a);
  };
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    const pool = { workers: 1 };
    const first = await witnesses(ws, { pool });
    assert.equal(first[0].cached, false);
    assert.ok(first[0].harvest && !first[0].harvest.error, JSON.stringify(first[0].harvest?.error));
    assert.equal(starts, 1);
    const again = await witnesses(ws, { pool });
    assert.equal(again[0].cached, true);
    assert.deepEqual(again[0].harvest, first[0].harvest);
    assert.equal(starts, 1, 'no pool started for a stored harvest');
    // --force harvests again (and so starts the workers)
    const forced = await witnesses(ws, { pool, force: true });
    assert.equal(forced[0].cached, false);
    assert.equal(starts, 2);
  } finally {
    ValidatorPool.start = start;
    ws.close();
  }
});
