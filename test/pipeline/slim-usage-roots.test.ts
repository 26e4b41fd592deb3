// Usage roots of the slim module (issue 26): a class passed by value that the faithful
// module holds only where the slim module prunes it (an option of a registry dict no
// validated string selects; a branch after an early return no validated value passes)
// is named by the usage line but no longer defined there. The slim module is emitted again
// with it as a usage root, so the block keeps its slim module and gets its line. Real
// validation in the sandbox (skipped where this machine has no torch or bubblewrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { indexedFixture } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const skip = await cannotValidate(true);

test('a class passed by value that slim pruned is a usage root of the slim module: the line runs', {
  skip: skip ?? false,
}, async () => {
  const { ws } = await indexedFixture('slimroots', 'slimroots', []);
  api.discover(ws);
  const recs = await extractAndValidate(ws, ['actblocks.acts.Mixer', 'actblocks.pool.Down'], { pool: { workers: 1 } });
  const cases = [
    { rec: recs[0], root: 'actblocks.acts.TanhGELU', arg: /act_layer=TanhGELU\b/, pruned: /options of _ACTS/ },
    { rec: recs[1], root: 'actblocks.pool.SmoothPool', arg: /pool_layer=SmoothPool\b/, pruned: /branches no value/ },
  ];
  for (const { rec, root, arg, pruned } of cases) {
    const v = rec.validation!;
    assert.equal(rec.ok, true, JSON.stringify(v));
    assert.ok(
      Object.values(v.stages).every((s) => s === 'pass'),
      JSON.stringify(v.stages),
    );
    // the witness passed the class itself; the slim module keeps its pruning, and the class
    assert.equal(v.argumentsSource, 'witness');
    assert.equal(rec.emission.profile, 'slim');
    assert.deepEqual(rec.emission.usageRoots, [root]);
    const text = readFileSync(rec.file, 'utf8');
    assert.match(text, pruned);
    assert.match(text, new RegExp(`^class ${root.split('.').pop()}\\(nn\\.Module\\):`, 'm'));
    // the line names the class the module now defines, and the sandbox ran it as written
    assert.equal(v.usageCheck, 'ran', v.usageSkipped);
    assert.match(v.usage ?? '', arg);
  }
});
