// Same answers from any folder (issue 28): one repository validated from two checkout
// folders writes byte-identical failure reports (`library/failed/*.json`), block records
// and stored validations. Their texts name the environment's site-packages as
// `<site-packages>`, the checkout as `<placerepo>`, and the harness's own frames without
// line numbers (validate/places.ts). The fixture (test/fixtures/places) fails one block
// with a traceback through torch, and another whose copy and original denote different
// folders (the original's in the checkout), whose original then fails to load a file
// there. The second copy's checkout then moves to a third folder: its blocks keep their
// stored results, which stay valid there. Real validation in the sandbox with real torch
// (skipped where this machine has neither).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { blockFile } from '../../src/library/layout.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { getExtraction } from '../../src/store/records.js';
import { fixtureWorkspace } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const skip = await cannotValidate(true);
const IDS = ['ppkg.model.Loader', 'ppkg.model.Net'];

/** The fixture copied to a fresh folder, indexed, extracted and validated: the failure
 *  report, the records' validations and the stored validation results' texts. */
async function validatedCopy(move = false) {
  const { ws, dir, spec } = fixtureWorkspace('places', 'placerepo');
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    let records = await extractAndValidate(ws, IDS, { pool: { workers: 1 } });
    if (move) {
      // the checkout moves to another folder: every block keeps its stored result (the
      // keys name the checkout by the repository, pipeline/reuse.ts layoutDigest)
      const moved = path.join(dir, 'moved');
      renameSync(spec.path!, moved);
      await api.index(ws, { repos: [{ ...spec, path: moved }], workers: 1 });
      assert.equal(ws.store.getRepo('placerepo')?.root, moved);
      const again = await extractAndValidate(ws, IDS, { pool: { workers: 1 } });
      assert.deepEqual(
        again.map((r) => [r.reuse?.reused, r.reuse?.why]),
        IDS.map(() => [true, again[0].reuse?.why]),
      );
      assert.deepEqual(
        again.map((r) => r.validation),
        records.map((r) => r.validation),
      );
      records = again;
    }
    const out = path.join(dir, 'store', 'library');
    const stored = ws.store.db
      .prepare('SELECT result FROM validations')
      .all()
      .map((r) => {
        const v = JSON.parse((r as { result: string }).result) as api.ValidationResult;
        return JSON.stringify([v.id, v.error, v.traceback ?? null, v.equivalence?.reason ?? null]);
      })
      .sort();
    return {
      dir,
      records,
      failure: readFileSync(blockFile(out, 'failed', 'ppkg.model.Loader', '.json'), 'utf8'),
      netFailure: readFileSync(blockFile(out, 'failed', 'ppkg.model.Net', '.json'), 'utf8'),
      modules: IDS.map((id) => getExtraction(ws.store, id)!.text),
      validations: IDS.map((id) => {
        const r = getExtraction(ws.store, id)!.record;
        return JSON.stringify({ ok: r.ok, validation: r.validation, validations: r.validations });
      }),
      stored,
    };
  } finally {
    ws.close();
  }
}

test('two checkout folders give byte-identical failure reports, records and stored validations', {
  skip: skip ?? false,
}, async () => {
  const a = await validatedCopy();
  const b = await validatedCopy(true);
  assert.notEqual(a.dir, b.dir);

  // Loader fails to build, through torch.load: its report names the installed file by
  // what it is, the harness's frame by file and function only
  const [loader, net] = a.records;
  assert.equal(loader.ok, false);
  assert.equal(loader.validation?.stages.instantiate, 'fail');
  const report = JSON.parse(a.failure) as { error: string; traceback: string };
  assert.match(report.error, /FileNotFoundError/);
  assert.match(report.traceback, /File "<site-packages>\/torch\/serialization\.py", line \d+, in /);
  assert.match(report.traceback, /File "<nnrag_harness\/stages\.py>", in \w+/);
  assert.doesNotMatch(report.traceback, /<nnrag_harness\/[^>]+>", line/);
  // Net's WEIGHTS is a folder next to its module: the copy's and the original's differ (the
  // namespace stage fails it), and the original, imported from the checkout, finds the
  // folder there and fails to load a file in it: both name the checkout by the repository
  assert.equal(net.ok, false);
  assert.equal(net.validation?.category, 'rebound-name', JSON.stringify(net.validation));
  assert.match(net.validation?.error ?? '', /'<placerepo>\/ppkg\/weights'/);
  assert.match(JSON.parse(a.netFailure).error, /'<placerepo>\/ppkg\/weights'/);
  assert.match(net.validation?.namespace?.mismatches?.[0].original ?? '', /'<placerepo>\/ppkg\/weights'/);
  assert.equal(net.validation?.equivalence?.status, 'skip');
  assert.match(net.validation?.equivalence?.reason ?? '', /'<placerepo>\/ppkg\/weights\/net\.pt'/);

  // nothing of either folder, nor of the environment's, in what is stored
  for (const s of [a, b])
    for (const text of [s.failure, s.netFailure, ...s.validations, ...s.stored]) {
      assert.ok(!text.includes(a.dir) && !text.includes(b.dir), text);
      assert.doesNotMatch(text, /\/[^\s"'<>]*\/site-packages\//);
    }
  // and the same bytes from both folders
  assert.equal(b.failure, a.failure);
  assert.equal(b.netFailure, a.netFailure);
  assert.deepEqual(b.modules, a.modules);
  assert.deepEqual(b.validations, a.validations);
  assert.deepEqual(b.stored, a.stored);
});
