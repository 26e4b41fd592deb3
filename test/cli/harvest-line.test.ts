// The line a finished harvest prints: a harvest whose modules all failed to import says so,
// with the most common error, instead of a bare "0 classes from 0 entry points".
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { harvestLine } from '../../src/cli/commands.js';

test('a harvest that listed nothing because its modules failed to import names the error', () => {
  const nms = 'RuntimeError: operator torchvision::nms does not exist';
  const line = harvestLine('org/vision', {
    witnesses: {},
    entries: [],
    ms: 11000,
    importFailures: { 'pkg.a': nms, 'pkg.b': nms, 'pkg.c': "ModuleNotFoundError: No module named 'yaml'" },
  });
  assert.match(line, /^witnesses of org\/vision: 0 classes from 0 entry points in /);
  assert.match(
    line,
    /: 3 of its modules failed to import \(2 with RuntimeError: operator torchvision::nms does not exist\)$/,
  );
  // a harvest that found entry points prints its counts only
  const ok = harvestLine('org/vision', {
    witnesses: { 'pkg.A': [] },
    entries: [{} as never],
    ms: 1000,
    importFailures: { 'pkg.c': 'ImportError: x' },
  });
  assert.doesNotMatch(ok, /failed to import/);
});
