// Guarded imports (`try: from .fused import op` / `except ImportError: op = None`): when
// the interned module cannot import in the validation environment (it needs an extern
// the environment lacks), the copy keeps the import as written so that it fails and the
// handler runs, as the original does there; copying the module's definitions would put
// its failing extern import at the top of the standalone module, unguarded. The emitted
// module runs in the real Python with torch; the pipeline validates it in the sandbox,
// and the namespace stage sees the same working directory in the original and the copy.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { bindSource } from '../../src/parse/binder.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { type FixtureWorkspace, indexedFixture } from '../support/indexed.js';
import { assertRan, checkModules } from '../support/python.js';
import { cannotValidate } from '../validate/common.js';

const ID = 'guardpkg.blocks.Scaled';
// what a validation environment's probe lists: the standard library and torch, not the
// extension guardpkg.fused needs
const ENV = ['os', 'sys', 'math', 'torch'];

async function workspace(): Promise<FixtureWorkspace> {
  return indexedFixture('guarded', 'org/guarded', ['guardpkg']);
}

describe('guarded imports', () => {
  it('marks imports in the body of a try whose handlers catch ImportError, not elsewhere', async () => {
    await api.ready();
    const src = [
      'try:\n    import a1\nexcept ImportError:\n    a1 = None',
      'try:\n    import a2\nexcept:\n    a2 = None',
      'try:\n    import a3\nexcept (OSError, ModuleNotFoundError) as e:\n    a3 = None',
      'try:\n    import a4\nexcept ValueError:\n    a4 = None',
      'try:\n    import a5\nexcept ImportError:\n    import a6',
      'try:\n    def f():\n        import a7\nexcept ImportError:\n    pass',
      'def g():\n    try:\n        import a8\n    except Exception:\n        return None',
    ].join('\n');
    const facts = bindSource(src);
    const edges = facts.statements.flatMap((s) => [...s.imports, ...(s.nestedImports ?? []).flatMap((n) => n.edges)]);
    const guarded = Object.fromEntries(edges.map((e) => [e.kind === 'import' ? e.module : e.name, e.guarded === true]));
    assert.deepEqual(guarded, { a1: true, a2: true, a3: true, a4: false, a5: true, a6: false, a7: false, a8: true });
  });

  it('keeps a guarded import of an interned module that cannot import in the environment, and the copy runs the handler', async () => {
    const { ws, dir } = await workspace();
    try {
      assert.ok(api.discover(ws).some((b) => b.id === ID));
      const { text, record } = api.extractText(ws, ID, { importable: ENV });
      assert.deepEqual(
        record.diagnostics.filter((d) => d.severity === 'error'),
        [],
      );
      assert.doesNotMatch(text, /nnrag_absent_fused_ext/, 'the failing extension is not hoisted into the copy');
      assert.match(
        text,
        /^try:\n {4}from guardpkg\.fused import fused_scale\nexcept ImportError:\n {4}fused_scale = None$/m,
      );
      assert.match(text, /^def half\w*\(x\):/m, 'a guarded import that works is still replaced by its definitions');
      assert.match(
        text,
        /^ {8}from guardpkg\.fused import fused_scale as fast$/m,
        'the lazy guarded import stays, absolute',
      );
      const kept = record.diagnostics.filter((d) => d.reason === 'guarded-import');
      assert.equal(kept.length, 2, JSON.stringify(record.diagnostics));
      assert.ok(kept.every((d) => d.severity === 'warning' && /nnrag_absent_fused_ext/.test(d.message)));
      const file = path.join(dir, 'scaled.py');
      writeFileSync(file, text);
      const r = checkModules([
        {
          name: 's',
          file,
          run: 'import torch\ny = m.Scaled()(torch.ones(2, 4))\nassert m.fused_scale is None and tuple(y.shape) == (2, 4)',
        },
      ]).s;
      assertRan(r, JSON.stringify(r));

      // where the environment is unknown (no probe) the module is interned as before
      const unknown = api.extractText(ws, ID, {});
      assert.match(unknown.text, /^import nnrag_absent_fused_ext$/m);
    } finally {
      ws.close();
    }
  });

  it('validates the copy in the sandbox: imports, runs, same namespace values (working directory) and outputs as the original', async (t) => {
    const skip = await cannotValidate(true);
    if (skip) return t.skip(skip);
    const { ws, dir } = await workspace();
    const pool = await ValidatorPool.start({ workers: 1 });
    try {
      api.discover(ws);
      // the original is imported by the repository's zygote, the copy in a child of it:
      // DATA_ROOT = os.path.abspath('..') must come out the same in both
      const x = api.extractText(ws, ID, { importable: ENV });
      const direct = await pool.validate({
        id: ID,
        source: x.text,
        className: 'Scaled',
        namespace: x.namespace!,
        original: { module: 'guardpkg.blocks', className: 'Scaled', sysPath: [path.join(dir, 'repo')] },
      });
      assert.equal(direct.stages.namespace, 'pass', JSON.stringify(direct.namespace));
      assert.equal(direct.ok, true, direct.error ?? '');
      const [rec] = await extractAndValidate(ws, [ID], { validator: pool, out: path.join(dir, 'library') });
      const v = rec.validation!;
      assert.equal(v.stages.import, 'pass', v.error ?? '');
      assert.equal(v.stages.forward, 'pass', v.error ?? '');
      // DATA_ROOT = os.path.abspath('..') is computed at import in the original and in the copy
      assert.equal(v.stages.namespace, 'pass', JSON.stringify(v.namespace));
      assert.ok((v.namespace?.checked ?? 0) > 0);
      assert.equal(v.stages.equivalence, 'pass', JSON.stringify(v.equivalence));
      assert.equal(rec.ok, true);
    } finally {
      await pool.close();
      ws.close();
    }
  });
});
