// A run whose validator pool starts for its first request (the environment known from an
// earlier run) starts its workers with that request's repository roots: no worker is
// restarted before its first block (warmed without roots, each was, ~2.5 s per worker).
// Real validation in the sandbox (skipped where this machine has no torch or bubblewrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { KV_KEYS } from '../../src/store/kv.js';
import type { CostTable } from '../../src/util/costs.js';
import { fixtureWorkspace } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const skip = await cannotValidate(true);

test('workers start with the roots of the first request', { skip: skip ?? false }, async () => {
  const { ws, spec } = fixtureWorkspace('reuse', 'rrepo');
  const starts = () =>
    (JSON.parse(ws.store.getKV(KV_KEYS.costsLast)!) as CostTable).rows
      .filter((r) => r.phase === 'worker start')
      .reduce((a, r) => a + r.count, 0);
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    // the first run learns what the environment's workers report (its id)
    const cold = await extractAndValidate(ws, ['rpkg.mlp.Mlp', 'rpkg.norm.Norm'], { pool: { workers: 1 } });
    for (const r of cold) assert.equal(r.validation?.stages.equivalence, 'pass', JSON.stringify(r.validation));
    const again = await extractAndValidate(ws, ['rpkg.mlp.Mlp', 'rpkg.norm.Norm'], {
      pool: { workers: 1 },
      force: true,
    });
    for (const r of again) assert.equal(r.validation?.stages.equivalence, 'pass', JSON.stringify(r.validation));
    // one worker, started once, with the repository's roots its requests bind
    assert.equal(starts(), 1);
    // the usage lines' time is a phase of its own, and so is what no stage covers, in its
    // parts with their CPU time; a worker's start has its CPU time too
    const rows = (JSON.parse(ws.store.getKV(KV_KEYS.costsLast)!) as CostTable).rows;
    const usage = rows.filter((r) => / usage line$/.test(r.phase));
    assert.ok(usage.length && usage.every((r) => r.wallMs > 0), JSON.stringify(rows.map((r) => r.phase)));
    for (const part of ['fork', 'child exit'])
      assert.ok(
        rows.some((r) => r.phase.endsWith(` outside the stages: ${part}`) && r.wallMs > 0 && (r.cpuMs ?? 0) > 0),
        JSON.stringify(rows.filter((r) => / outside the stages/.test(r.phase))),
      );
    const start = rows.find((r) => r.phase === 'worker start');
    assert.ok(start && (start.cpuMs ?? 0) > 0, JSON.stringify(start));
  } finally {
    ws.close();
  }
});
