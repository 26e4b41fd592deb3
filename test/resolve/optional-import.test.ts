// An optional import (`try: from .fused import FusedShift / except ImportError:`) of an
// indexed module whose own imports the validation environment lacks (a compiled
// extension): the copy keeps the import inside the try, so it fails and falls back as the
// original does there, instead of copying the kernel module with its failing import at
// the top. When the environment is unknown, or has the extension, the module is interned
// as before. The emitted module is run in the real Python.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { assertRan, checkModules } from '../support/python.js';

const root = fixture('optimport', 'repo');

describe('optional imports of indexed modules the environment cannot import', () => {
  it('keeps the import in its try statement, so the copy falls back like the original', async () => {
    const dir = tempDir();
    const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
    try {
      await api.index(ws, {
        repos: [
          {
            name: 'org/optimport',
            url: null,
            path: root,
            priority: 1,
            paths: ['optpkg'],
            description: null,
            packageRoots: null,
          },
        ],
        workers: 1,
      });
      const id = 'optpkg.layers.Shift';
      assert.ok(api.discover(ws).some((b) => b.id === id));

      const lacks = api.extractText(ws, id, { importable: ['torch'] });
      assert.doesNotMatch(lacks.text, /^import optpkg_fused_ext/m, 'the extension import is not hoisted');
      assert.match(
        lacks.text,
        /^try:\n {4}from optpkg\.fused import FusedShift\nexcept ImportError:\n {4}FusedShift = None/m,
      );
      const file = path.join(dir, 'shift.py');
      writeFileSync(file, lacks.text);
      const r = checkModules([
        {
          name: 'shift',
          file,
          run: 'import torch\nassert m.FusedShift is None\nassert m.Shift(fused=True)(torch.arange(3.0)).tolist() == [2.0, 0.0, 1.0]',
        },
      ]).shift;
      assert.deepEqual(r.undefined, []);
      assertRan(r);

      // the extension importable, or nothing known: the kernel is copied as before
      for (const opts of [{ importable: ['torch', 'optpkg_fused_ext'] }, {}]) {
        const interned = api.extractText(ws, id, opts);
        assert.match(interned.text, /^import optpkg_fused_ext$/m, JSON.stringify(opts));
        assert.match(interned.text, /^class FusedShift/m);
      }
    } finally {
      ws.close();
    }
  });
});
