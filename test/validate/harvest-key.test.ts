// The harvest's cache key covers what a harvest runs of the harness, not the whole
// harness (issue 27; environment.ts harvestHarness, witness/store.ts harvestKey): on a
// copy of the real harness files, an edit of a module the harvest step does not import
// (a validation stage) leaves the harvest id, and so the stored harvest, as it was, while
// the validation id changes; an edit of a module it imports, even only through an import
// inside a function, changes the harvest id, and a new module joins it once the harvest
// imports it. With a real pool and a real SQLite store, the harvest stored before such an
// edit is the current one after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import {
  HARVEST_ENTRY,
  harnessImports,
  harnessPath,
  harnessSource,
  harvestHarness,
} from '../../src/validate/environment.js';
import { ValidatorPool, environmentIdOf } from '../../src/validate/index.js';
import { currentHarvest, harvestKey, libraryModules, repoWitnesses } from '../../src/validate/witness/index.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotValidate } from './common.js';

/** A copy of the harness that runs (harness.py and nnrag_harness/). */
function harnessCopy(): string {
  const dir = path.join(tempDir(), 'python');
  cpSync(path.dirname(harnessPath()), dir, { recursive: true });
  return dir;
}
const mod = (dir: string, name: string) => path.join(dir, 'nnrag_harness', `${name}.py`);

test('imports inside functions count for the harvest; top-level ones alone for the load order', () => {
  const texts = new Map([
    ['__init__', 'X = 1\n'],
    ['a', 'from . import b as B\n\ndef f():\n    from nnrag_harness.c import g\n    import nnrag_harness.d\n'],
    ['b', ''],
    ['c', ''],
    ['d', ''],
  ]);
  assert.deepEqual([...harnessImports(texts).get('a')!].sort(), ['b']);
  assert.deepEqual([...harnessImports(texts, true).get('a')!].sort(), ['b', 'c', 'd']);
});

test('the harvest id follows the modules the harvest step imports, on the real harness files', () => {
  const dir = harnessCopy();
  const before = harvestHarness(dir);
  // the copy is the harness that runs
  assert.deepEqual(before, harvestHarness());
  assert.equal(harnessSource(dir).hash, harnessSource().hash);
  // the step's entry, what it imports at top level (values), inside functions (usage is
  // imported by inputs only inside its functions), and the package itself
  for (const m of [HARVEST_ENTRY, '__init__', 'harvest', 'harvest_docs', 'values', 'inputs', 'usage'])
    assert.ok(before.modules.includes(m), `${m} in ${before.modules.join(', ')}`);
  // the validation stages and the argument sources are not run by a harvest
  for (const m of ['stages', 'candidates', 'source_guess', 'source_witness', 'namespace', 'worker'])
    assert.ok(!before.modules.includes(m), `${m} not in ${before.modules.join(', ')}`);

  // (a) a validation stage edited: the harvest id stays, the validation id changes
  appendFileSync(mod(dir, 'stages'), '\n# a validation rule changed\n');
  assert.equal(harvestHarness(dir).hash, before.hash);
  assert.notEqual(harnessSource(dir).hash, harnessSource().hash);

  // a new module no harvest module imports: not in the id
  writeFileSync(mod(dir, 'zz_helper'), '"""A helper."""\nWIDTH = 3\n');
  assert.equal(harvestHarness(dir).hash, before.hash);
  assert.ok(!harvestHarness(dir).modules.includes('zz_helper'));

  // (b) a module the harvest imports only inside a function edited: the id changes
  const usage = readFileSync(mod(dir, 'usage'), 'utf8');
  appendFileSync(mod(dir, 'usage'), '\n# edited\n');
  assert.notEqual(harvestHarness(dir).hash, before.hash);
  writeFileSync(mod(dir, 'usage'), usage);
  assert.equal(harvestHarness(dir).hash, before.hash);

  // the new module imported (inside a function) by a module the harvest imports: it joins
  // the id by itself, and editing it alone changes the id
  appendFileSync(
    mod(dir, 'structured'),
    '\n\ndef _zz_width():\n    from .zz_helper import WIDTH\n\n    return WIDTH\n',
  );
  const joined = harvestHarness(dir);
  assert.ok(joined.modules.includes('zz_helper'), joined.modules.join(', '));
  appendFileSync(mod(dir, 'zz_helper'), '# edited\n');
  assert.notEqual(harvestHarness(dir).hash, joined.hash);

  // without its entry module the harness cannot say what a harvest runs
  rmSync(mod(dir, HARVEST_ENTRY));
  assert.throws(() => harvestHarness(dir), /no module harvest_step\.py/);
});

const skip = await cannotValidate(true);

test('a harness edit the harvest does not import keeps the stored harvest; one it imports harvests again', {
  skip: skip ?? false,
}, async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'hrepo');
  cpSync(fixture('harvest-reuse'), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    await api.index(ws, {
      repos: [{ name: 'hrepo', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    api.discover(ws);
    const cold = await repoWitnesses(ws.store, pool, 'hrepo', {
      modules: libraryModules(ws.corpus(), 'hrepo'),
      corpus: ws.corpus(),
    });
    assert.ok(cold && !cold.cached);
    assert.ok(Object.keys(cold.result.witnesses).length > 0, JSON.stringify(cold.result.entries));

    // the ids the same environment gets with an edited copy of the harness
    const probed = { env: pool.env, key: pool.envKey };
    const info = { torch: pool.torch, python: pool.pythonVersion };
    const py = harnessCopy();
    assert.equal(environmentIdOf(probed, info, 'harvest', py), pool.harvestEnvId);
    assert.equal(environmentIdOf(probed, info, 'validation', py), pool.envId);
    assert.notEqual(pool.harvestEnvId, pool.envId);

    // (a) a validation stage edited: validations run again (another environment id), the
    // harvest's key is the same and the stored harvest is the current one
    appendFileSync(mod(py, 'stages'), '\n# a validation rule changed\n');
    assert.notEqual(environmentIdOf(probed, info, 'validation', py), pool.envId);
    const kept = environmentIdOf(probed, info, 'harvest', py);
    assert.equal(harvestKey(ws.store, 'hrepo', kept), harvestKey(ws.store, 'hrepo', pool.harvestEnvId));
    assert.deepEqual(currentHarvest(ws.store, 'hrepo', kept), cold.result);
    const again = await repoWitnesses(ws.store, pool, 'hrepo', { modules: libraryModules(ws.corpus(), 'hrepo') });
    assert.ok(again?.cached, 'the stored harvest is read, nothing runs');

    // (b) a module the harvest runs edited: another key, nothing stored under it
    appendFileSync(mod(py, 'harvest'), '\n# a harvest rule changed\n');
    const changed = environmentIdOf(probed, info, 'harvest', py);
    assert.notEqual(changed, pool.harvestEnvId);
    assert.notEqual(harvestKey(ws.store, 'hrepo', changed), harvestKey(ws.store, 'hrepo', pool.harvestEnvId));
    assert.equal(currentHarvest(ws.store, 'hrepo', changed), null);
    // a harvest stored by an earlier build, under the whole environment id: not found
    assert.equal(currentHarvest(ws.store, 'hrepo', pool.envId), null);
  } finally {
    await pool.close();
    ws.close();
  }
});
