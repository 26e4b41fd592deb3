// Emission order: a real cycle of eager reads is reported (`eager-cycle`), never emitted
// silently. The fixture's modules read each other's names when they run; Python imports
// them only because a circular `from .b import B` fails inside a `try`.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';

describe('emission order', () => {
  it('reports a cycle of eager reads between two modules', async () => {
    const dir = fixture('order', 'eager-cycle');
    const ws = api.Workspace.open(path.join(tempDir('nnrag-order-'), 'store'));
    try {
      await api.index(ws, {
        repos: [{ name: 'cycle', url: null, path: dir, priority: 1, paths: [], description: null, packageRoots: [''] }],
        workers: 1,
      });
      const { record, text } = api.extractText(ws, 'pkg.a.Block');
      assert.ok(text, 'the module is still written, for inspection');
      const cycles = record.diagnostics.filter((d) => d.reason === 'eager-cycle');
      assert.equal(cycles.length, 1, JSON.stringify(record.diagnostics));
      assert.equal(cycles[0].severity, 'error');
      assert.match(cycles[0].message, /pkg\/a\.py:\d+ -> .*pkg\/b\.py:\d+|pkg\/b\.py:\d+ -> .*pkg\/a\.py:\d+/);
      assert.equal(record.ok, false);
    } finally {
      ws.close();
    }
  });
});
