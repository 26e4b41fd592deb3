// Test-suite witnesses of an operator library (src/validate/README.md "Tests and documented
// examples"), each of the ways its tests build an operator that the harvest used to miss:
// an import inside the test function (after collection, so the wrappers installed at
// collection never saw the class), a test parametrized over accelerator devices only (every
// parametrization skipped here: it runs once on the CPU in their stead) or skipped for want
// of a device (run on the CPU too), a data file read by
// a path relative to the repository root (pytest runs from there), and an operator whose
// compiled kernel has no CPU implementation (the test's inputs recorded though the call
// raised, so validation says native-op-no-cpu instead of failing on guessed inputs). A
// class defined only under a module-level `if` this environment does not take, and absent
// from the original module too, is `conditional-class`, not a NameError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { libraryModules, repoWitnesses } from '../../src/validate/witness/index.js';
import { fixtureWorkspace } from '../support/indexed.js';
import { cannotRunTests } from './common.js';

const skip = await cannotRunTests();

interface V {
  category?: string;
  error?: string;
  stages: Record<string, string>;
  argumentsSource?: string;
  argumentsOrigin?: string;
}

test('test witnesses: lazy imports, device-only parametrizations on the CPU, data by relative path, no-CPU-kernel calls; a class under an untaken branch', {
  skip: skip ?? false,
}, async () => {
  const { ws, spec } = fixtureWorkspace('testdev', 'drepo');
  const pool = await ValidatorPool.start({ workers: 2 });
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    const modules = libraryModules(ws.corpus(), 'drepo');
    const got = await repoWitnesses(ws.store, pool, 'drepo', { modules, entryMs: 20000, testMs: 5000 });
    assert.ok(got && !got.cached);
    const h = got.result;
    const first = (cls: string) => h.witnesses[`devlib.ops.${cls}`]?.[0];
    // imported inside the test function
    assert.equal(first('Gridded')?.entry, 'test:tests/test_ops.py::test_gridded', JSON.stringify(h.entries));
    assert.deepEqual(first('Gridded')?.args, ['w4-h3']);
    // every device of the parametrization missing: its first one run on the CPU, named so
    assert.equal(first('Placed')?.entry, 'test:tests/test_ops.py::test_placed[npu]@cpu', JSON.stringify(h.entries));
    assert.ok(first('Placed')?.inputs, 'the CPU reference call before the move to the device is recorded');
    assert.equal(
      h.witnesses['devlib.ops.Placed'].length,
      1,
      'one CPU stand-in per test function and set of other parameters',
    );
    // a test skipped for want of its device: run on the CPU, what it built before the move kept
    assert.equal(first('Marked')?.entry, 'test:tests/test_ops.py::test_marked@cpu', JSON.stringify(h.entries));
    assert.deepEqual(first('Marked')?.args, ['w3-h2']);
    // the data file by its path relative to the repository root
    assert.deepEqual(first('Loaded')?.args, ['w6-h3'], JSON.stringify(h.entries));
    // the call that reached the kernel without a CPU implementation: its inputs kept
    const k = first('Kerneled') as { raised?: string; inputs?: { args: { $tensor: number[] }[] } } | undefined;
    assert.equal(k?.raised, 'native-op-no-cpu', JSON.stringify(h.witnesses['devlib.ops.Kerneled']));
    assert.deepEqual(k?.inputs?.args[0].$tensor, [2, 7]);

    const ids = ['Gridded', 'Placed', 'Loaded', 'Kerneled', 'Accel'].map((c) => `devlib.ops.${c}`);
    const res = await extractAndValidate(ws, ids, { validator: pool, force: true });
    const v = new Map(res.map((r) => [r.id, r.validation as V]));
    for (const id of ids.slice(0, 3)) {
      const x = v.get(id)!;
      assert.equal(x.stages.forward, 'pass', `${id}: ${JSON.stringify(x)}`);
      assert.equal(x.argumentsSource, 'test', id);
      assert.match(x.argumentsOrigin ?? '', /^tests\/test_ops\.py::test_/, id);
    }
    const kern = v.get('devlib.ops.Kerneled')!;
    assert.equal(kern.category, 'native-op-no-cpu', JSON.stringify(kern));
    const accel = v.get('devlib.ops.Accel')!;
    assert.equal(accel.category, 'conditional-class', JSON.stringify(accel));
    assert.match(accel.error ?? '', /no_such_accelerator_backend.*binds Accel to torch\.nn\.modules\.linear\.Identity/);
  } finally {
    await pool.close();
    ws.close();
  }
});
