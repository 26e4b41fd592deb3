// Usage roots stay bounded (issue 25/26): definitions copied only for the usage line may
// add at most `usageRootsMaxLines` lines; past that the block keeps its module without
// them (and without a usage line) rather than becoming unreadable. Real validation in the
// sandbox (skipped where this machine has no torch or bubblewrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../../src/nnrag.js';
import { extractAndValidate, USAGE_ROOTS_MAX_LINES } from '../../src/pipeline/pipeline.js';
import { indexedFixture } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const skip = await cannotValidate(true);

async function stem(maxLines?: number) {
  const { ws } = await indexedFixture('usage', 'usage');
  api.discover(ws);
  const opts = maxLines === undefined ? {} : { usageRootsMaxLines: maxLines };
  const [rec] = await extractAndValidate(ws, ['tinygpt.roots.Stem'], { pool: { workers: 1 }, ...opts });
  return rec;
}

test('usage roots within the bound are copied; past it the block keeps its module without them', {
  skip: skip ?? false,
}, async () => {
  assert.equal(USAGE_ROOTS_MAX_LINES, 1000);
  // FrozenNorm (a few lines) is within the default bound: the module holds it, the line runs
  const within = await stem();
  assert.equal(within.ok, true, JSON.stringify(within.validation));
  assert.deepEqual(within.emission.usageRoots, ['tinygpt.norms.FrozenNorm']);
  assert.equal(within.validation?.usageCheck, 'ran');
  assert.match(within.validation?.usage ?? '', /norm_layer=FrozenNorm/);
  // a bound of one line: the same block validates as before, without the root or the line
  const past = await stem(1);
  assert.equal(past.ok, true, JSON.stringify(past.validation));
  assert.deepEqual(past.validation?.stages, within.validation?.stages);
  assert.equal(past.emission.usageRoots, undefined);
  assert.equal(past.validation?.usage, undefined);
  assert.ok(past.lines < within.lines, `${past.lines} < ${within.lines}`);
});
