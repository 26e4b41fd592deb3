// Witnesses from a repository's own tests and documented examples (src/validate/README.md
// "Tests and documented examples"): a fixture library of layers with no model builder,
// whose layout-string constructors nothing guesses. Its pytest suite (parametrize, a
// conftest fixture, a test failing after it built its layer, a test left out because the
// classes it names were called already, a test that never ends, a test file that does not
// import, in the same pytest session),
// its README's Python code block and a class docstring's `>>>` examples are run in the
// real sandbox; each block that is `needs-args` without them passes forward and
// equivalence with them, named by its source; the hanging test is stopped and reported;
// a second harvest with nothing changed is read from the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { currentHarvest, libraryModules, repoWitnesses } from '../../src/validate/witness/index.js';
import { fixture, tempDir } from '../helpers.js';
import { cannotRunTests } from './common.js';

/** Why these tests cannot run here: no sandbox, no torch, or a torch interpreter without
 *  pytest (the validator's interpreter: NNRAG_PYTHON, else the one it finds). */

const skip = await cannotRunTests();

test('witnesses from pytest tests (parametrize, fixtures), a README code block and docstring examples; a hanging test stopped; cached', {
  skip: skip ?? false,
}, async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'lrepo');
  cpSync(fixture('testwit'), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const pool = await ValidatorPool.start({ workers: 2 });
  try {
    await api.index(ws, {
      repos: [{ name: 'lrepo', url: null, path: repo, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    api.discover(ws);
    const ids = ['layerlib.layers.Banded', 'layerlib.layers.Scaler', 'layerlib.layers.Spread'];
    // without witnesses no guess builds them
    const none = await extractAndValidate(ws, ids, { validator: pool, witnesses: false, force: true });
    for (const r of none)
      assert.equal(
        (r.validation as { category: string }).category,
        'needs-args',
        `${r.id}: ${JSON.stringify(r.validation)}`,
      );

    const modules = libraryModules(ws.corpus(), 'lrepo');
    const got = await repoWitnesses(ws.store, pool, 'lrepo', { modules, entryMs: 8000, testMs: 2000 });
    assert.ok(got && !got.cached);
    const h = got.result;
    const entry = (name: string) => h.entries.find((e) => e.entry === name);
    // the test file: pytest collected five tests (three parametrized), one failed after
    // building, two parametrizations passed, the third was not run (its code names only
    // Banded, through a helper, and two tests naming Banded had run in a row calling no
    // class new to the harvest), one stopped by its own budget
    // the test files in one pytest session, the one reaching more classes first; the
    // file that does not import is reported at collection and the others still run. The
    // harvest chooses from the answers of the steps dispatched before it in dispatch
    // order (a lag of 2W-1 steps, so the choice never depends on which finished first):
    // the README block's answer (Spread) is not applied yet when the session is chosen,
    // so test_skipped.py, naming Spread, joins it, and its one test is skipped
    const tf = entry('test:tests/test_layers.py +2');
    assert.ok(tf?.tests, JSON.stringify(h.entries));
    assert.deepEqual(
      tf.tests.files,
      ['tests/test_layers.py', 'tests/test_skipped.py', 'tests/test_unimportable.py'],
      JSON.stringify(tf),
    );
    assert.equal(tf.tests.collected, 6, JSON.stringify(tf));
    assert.equal(tf.tests.skipped, 1, JSON.stringify(tf));
    assert.equal(tf.tests.passed, 2, JSON.stringify(tf));
    assert.equal(tf.tests.failed, 2, JSON.stringify(tf)); // the stopped test counts as failed
    assert.equal(tf.tests.unneeded, 1, JSON.stringify(tf));
    assert.deepEqual(tf.tests.stopped, ['tests/test_layers.py::test_hangs'], JSON.stringify(tf));
    // the budgets are CPU time: the hanging test's own (2 s) ended it, not the step's (8 s)
    assert.ok((tf.cpuMs ?? Infinity) < 8000, `the hanging test did not take the whole step: ${JSON.stringify(tf)}`);
    // one witness per test run (the failing test's too), each named by its test id,
    // inputs from the fixture; none from the parametrization not run
    const banded = h.witnesses['layerlib.layers.Banded'];
    const byEntry = new Map(banded.map((w) => [w.entry, w.args]));
    assert.deepEqual(byEntry.get('test:tests/test_layers.py::test_banded[w6-h2]'), ['w6-h2'], JSON.stringify(banded));
    assert.deepEqual(byEntry.get('test:tests/test_layers.py::test_banded[w6-h3]'), ['w6-h3'], JSON.stringify(banded));
    assert.equal(byEntry.has('test:tests/test_layers.py::test_banded[w6-h1]'), false, JSON.stringify(banded));
    assert.deepEqual(
      byEntry.get('test:tests/test_layers.py::test_banded_fails_after_building'),
      ['w6-h4'],
      JSON.stringify(banded),
    );
    assert.deepEqual((banded[0].inputs!.args[0] as { $tensor: number[] }).$tensor, [3, 6]);
    // what the hanging test built before it hung is kept
    assert.equal(h.witnesses['layerlib.layers.Stalled']?.[0]?.entry, 'test:tests/test_layers.py::test_hangs');
    // the README's second block, run after the first block's imports
    const spread = h.witnesses['layerlib.layers.Spread'];
    assert.deepEqual(spread?.[0]?.args, ['w4-h3'], JSON.stringify(h.entries));
    assert.equal(spread[0].entry, 'readme:README.md:17');
    // the docstring's >>> examples, in the module's namespace
    const scaler = h.witnesses['layerlib.layers.Scaler'];
    assert.deepEqual(scaler?.[0]?.args, ['affine:5'], JSON.stringify(h.entries));
    assert.match(scaler[0].entry ?? '', /^doctest:layerlib\/layers\.py:\d+$/);
    assert.ok(h.docsMs && h.docsMs > 0);

    // nothing changed: read from the store; a changed test file harvests again
    const again = await repoWitnesses(ws.store, pool, 'lrepo', { modules });
    assert.ok(again?.cached);
    assert.deepEqual(again.result.witnesses, h.witnesses);
    const tf2 = path.join(repo, 'tests', 'test_layers.py');
    const text = readFileSync(tf2, 'utf8');
    writeFileSync(tf2, text + '\n# changed\n');
    assert.equal(
      currentHarvest(ws.store, 'lrepo', pool.harvestEnvId),
      null,
      'a changed test file is not the stored harvest',
    );
    writeFileSync(tf2, text);
    assert.ok(currentHarvest(ws.store, 'lrepo', pool.harvestEnvId));

    const withW = await extractAndValidate(ws, ids, { validator: pool, force: true });
    const want: Record<string, [string, RegExp]> = {
      'layerlib.layers.Banded': ['test', /^tests\/test_layers\.py::test_banded/],
      'layerlib.layers.Scaler': ['doctest', /^layerlib\/layers\.py:\d+$/],
      'layerlib.layers.Spread': ['readme', /^README\.md:17$/],
    };
    for (const r of withW) {
      const v = r.validation as {
        stages: Record<string, string>;
        argumentsSource?: string;
        argumentsOrigin?: string;
        equivalence?: unknown;
      };
      assert.equal(v.stages.forward, 'pass', `${r.id}: ${JSON.stringify(v)}`);
      assert.equal(v.stages.equivalence, 'pass', `${r.id}: ${JSON.stringify(v.equivalence)}`);
      assert.equal(v.argumentsSource, want[r.id][0], r.id);
      assert.match(v.argumentsOrigin ?? '', want[r.id][1], r.id);
    }
  } finally {
    await pool.close();
    ws.close();
  }
});
