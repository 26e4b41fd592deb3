// Same answers from any folder, for values (issue 28): a witness that holds a checkout's
// absolute path (the fixture's test builds `CfgNet(os.path.join(os.path.dirname(__file__),
// 'cfg.json'))`, test/fixtures/placevals) is stored in the harvest, the block record's
// `args` and its usage line named by place (`<cfgrepo>/tests/cfg.json`,
// validate/places.ts), and the environment is named by its lock, not its folder. The same
// fixture checked out in two folders, validated with the same PyPI environment reached
// through two folders (the second a symbolic link to the first), stores byte-identical
// harvests, records, library files and stored validations; the validation that opens the
// file passes (the value is mapped back to the checkout where the request is built), and
// still passes with --force after the checkout moved to a third folder. Real validation
// in the sandbox with real torch and pytest (skipped where this machine lacks them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, renameSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { getExtraction } from '../../src/store/records.js';
import { storedHarvest } from '../../src/validate/witness/index.js';
import { tempDir } from '../helpers.js';
import { fixtureWorkspace } from '../support/indexed.js';
import { cannotRunTests, torchPython } from '../validate/common.js';

const skip = await cannotRunTests();
const ID = 'cfgnet.model.CfgNet';

/** The folder of the PyPI environment nnrag made that the tests validate with (its
 *  interpreter's venv holding nnrag-lock.txt), else null. */
async function lockedEnv(): Promise<string | null> {
  const py = (await torchPython())?.python;
  const dir = py ? path.dirname(path.dirname(py)) : null;
  return dir && existsSync(path.join(dir, 'nnrag-lock.txt')) ? dir : null;
}

/** A record's fields that measure the run, not the block (bench/queue.ts RUN_FIELDS): the
 *  library file's path (it names the store) and times; of a harvest and a stored
 *  validation, its steps' times, memory peaks and CPU charges too. */
const RUN_MEASURES = new Set(['file', 'ms', 'memoryMb', 'charge', 'timings', 'cpuTimings', 'outside', 'usageParts']);
const runFields = (k: string) => RUN_MEASURES.has(k) || k.endsWith('Ms');
const withoutRunFields = (v: unknown) => JSON.stringify(v, (k, x) => (runFields(k) ? undefined : x));

/** The fixture copied to a fresh folder, indexed, extracted and validated with the
 *  interpreter `python`: what the store and the library hold. */
async function validatedCopy(python: string | undefined, move = false) {
  const { ws, dir, spec } = fixtureWorkspace('placevals', 'cfgrepo');
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    const [record] = await extractAndValidate(ws, [ID], { pool: { workers: 1, python } });
    const lib = path.join(dir, 'store', 'library');
    const files = (sub: string) =>
      existsSync(path.join(lib, sub))
        ? readdirSync(path.join(lib, sub))
            .sort()
            .map((f) => `${sub}/${f}\n${readFileSync(path.join(lib, sub, f), 'utf8')}`)
        : [];
    const rows = (sql: string) =>
      ws.store.db
        .prepare(sql)
        .raw()
        .all()
        .map((r) => JSON.stringify(r));
    // the stored results without what measures their runs
    const measured = (sql: string) =>
      (ws.store.db.prepare(sql).raw().all() as string[][]).map((r) =>
        withoutRunFields([...r.slice(0, -1), JSON.parse(r[r.length - 1])]),
      );
    const state = {
      dir,
      record,
      stored: withoutRunFields(getExtraction(ws.store, ID)!.record),
      rawHarvest: rows('SELECT result FROM witness_harvests'),
      harvest: measured('SELECT repo, key, env, result FROM witness_harvests ORDER BY repo'),
      rawValidations: rows('SELECT result FROM validations'),
      validations: measured('SELECT hash, env, result FROM validations ORDER BY hash, env'),
      environments: rows('SELECT id, env, label, ok FROM block_environments ORDER BY id, env'),
      library: [...files('blocks'), ...files('failed')],
    };
    if (move) {
      // the checkout moves: the stored harvest stays current (its key reads contents), its
      // value now maps back to the new folder, and validating again opens the file there
      const moved = path.join(dir, 'moved');
      renameSync(spec.path!, moved);
      await api.index(ws, { repos: [{ ...spec, path: moved }], workers: 1 });
      const h = storedHarvest(ws.store, 'cfgrepo');
      assert.deepEqual(h?.witnesses[ID][0].args, [path.join(moved, 'tests', 'cfg.json')]);
      const [again] = await extractAndValidate(ws, [ID], { pool: { workers: 1, python }, force: true });
      assert.equal(again.ok, true, JSON.stringify(again.validation));
      assert.deepEqual(again.validation, record.validation);
      assert.equal(
        withoutRunFields(getExtraction(ws.store, ID)!.record.validations),
        withoutRunFields(record.validations),
      );
    }
    return state;
  } finally {
    ws.close();
  }
}

test('a witness naming a checkout file: two checkout and environment folders store the same bytes; the value maps back', {
  skip: skip ?? false,
}, async () => {
  const env = await lockedEnv();
  // the second copy reaches the same environment through another folder
  let other: string | undefined;
  if (env) {
    const link = path.join(tempDir(), 'env-elsewhere');
    symlinkSync(env, link);
    other = path.join(link, 'bin', 'python');
  }
  const a = await validatedCopy(env ? path.join(env, 'bin', 'python') : undefined);
  const b = await validatedCopy(other, true);
  assert.notEqual(a.dir, b.dir);

  // the class is built only by its test's value, which opens the file in the checkout
  const v = a.record.validation!;
  assert.equal(a.record.ok, true, JSON.stringify(v));
  assert.equal(v.stages.forward, 'pass');
  assert.equal(v.stages.equivalence, 'pass', JSON.stringify(v));
  assert.equal(v.argumentsSource, 'test');
  assert.equal(v.argumentsOrigin, 'tests/test_model.py::test_cfgnet');
  assert.deepEqual(v.args, { args: ['<cfgrepo>/tests/cfg.json'], kwargs: {} });
  assert.match(v.usage ?? '', /CfgNet\("<cfgrepo>\/tests\/cfg\.json"\)/);
  assert.match(a.harvest[0], /"args":\["<cfgrepo>\/tests\/cfg\.json"\]/);
  if (env) {
    // named by what it is: the lock and the versions, no folder
    assert.equal(v.python, undefined);
    assert.equal(v.environment?.interpreter, undefined);
    assert.equal(v.environment?.venv, undefined);
    assert.match(v.environment?.label ?? '', /^PyPI environment, lock [0-9a-f]{16} \(python [^,]+, torch /);
    assert.equal(v.environment?.lock, v.environment?.label.match(/lock ([0-9a-f]{16})/)?.[1]);
  }

  // nothing of either checkout's folder (nor, with the environment, of its folders) in
  // what is stored, and the same bytes from both (but for the times and memory peaks of
  // the runs, which no two runs share)
  const texts = (s: typeof a) => [s.stored, ...s.rawHarvest, ...s.rawValidations, ...s.environments, ...s.library];
  for (const s of [a, b])
    for (const t of texts(s)) {
      assert.ok(!t.includes(a.dir) && !t.includes(b.dir), t.slice(0, 2000));
      if (env) assert.ok(!t.includes(env) && !t.includes('env-elsewhere'), t.slice(0, 2000));
    }
  assert.deepEqual(b.harvest, a.harvest);
  assert.equal(b.stored, a.stored);
  assert.deepEqual(b.validations, a.validations);
  assert.deepEqual(b.environments, a.environments);
  assert.deepEqual(b.library, a.library);
});
