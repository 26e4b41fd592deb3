// The sandbox probe of decorators the corpus does not show (src/emit/slim/probe.ts): a
// decorator that returns its argument but marks it (`@torch.jit.unused` sets the
// attribute TorchScript reads) is not a registration, so the library's slim module keeps
// it. Real tree-sitter, SQLite, torch and sandbox (fixture test/fixtures/slim).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { Costs } from '../../src/util/costs.js';
import { cannotValidate, torchPython } from '../validate/common.js';
import { slimWorkspace } from './slim-fixture.js';
import { probeSource, probeVerdicts } from '../../src/emit/slim/probe.js';
import type { NamespaceMap } from '../../src/emit/emitter.js';

/** The slim fixture indexed and discovered in a new store, with a pool of one worker. */
async function slimStore() {
  const { ws, dir } = await slimWorkspace();
  return { dir, ws, pool: await ValidatorPool.start({ workers: 1 }) };
}

test('a decorator that marks the function it returns is not removed by slim', async (t) => {
  const skip = await cannotValidate(true);
  if (skip) return t.skip(skip);
  const { dir, ws, pool } = await slimStore();
  try {
    const id = 'slimpkg.marked.Marked';
    // statically unknown (torch's body is not in the corpus): the static slim module keeps
    // it until the probe proves it returns its argument unchanged
    assert.match(api.extractText(ws, id, { profile: 'slim' }).text, /^@torch\.jit\.unused$/m);
    const [rec] = await extractAndValidate(ws, [id], { validator: pool, out: path.join(dir, 'library') });
    assert.equal(rec.ok, true, rec.validation?.error ?? '');
    assert.deepEqual(rec.emission.proven ?? [], [], 'the probe proves nothing');
    assert.ok(!(rec.emission.removed ?? []).some((r) => r.what === '@torch.jit.unused'), JSON.stringify(rec.emission));
    const stored = api.extractText(ws, id, { profile: rec.emission.profile }).text;
    assert.match(stored, /^@torch\.jit\.unused\ndef debug_stats/m);
  } finally {
    await pool.close();
    ws.close();
  }
});

test('a decorator site in the closure of several blocks is probed once per run', async (t) => {
  const skip = await cannotValidate(true);
  if (skip) return t.skip(skip);
  const { dir, ws, pool } = await slimStore();
  try {
    const ids = ['slimpkg.gated.SharedGate', 'slimpkg.gated.GatedA', 'slimpkg.gated.GatedB'];
    const costs = new Costs();
    const recs = await extractAndValidate(ws, ids, { validator: pool, out: path.join(dir, 'library'), costs });
    const count = (phase: string) =>
      costs
        .table('t')
        .rows.filter((r) => r.phase === phase)
        .reduce((n, r) => n + r.count, 0);
    for (const r of recs) {
      assert.equal(r.ok, true, `${r.id}: ${r.validation?.error ?? ''}`);
      // every block's slim module lost the registration, proven by the one probe
      assert.equal(r.emission.profile, 'slim', r.id);
      assert.deepEqual(r.emission.proven, ['org/slim:slimpkg.gated:9'], r.id);
      assert.ok(
        (r.emission.removed ?? []).some((x) => x.what === '@HOOKS.register'),
        r.id,
      );
      assert.doesNotMatch(readFileSync(r.file!, 'utf8'), /^@HOOKS\.register$/m, r.id);
    }
    assert.equal(count('validate decorator probe import'), 1);
    assert.equal(count('validate decorator probe (proven earlier in the run)'), 2);
  } finally {
    await pool.close();
    ws.close();
  }
});

test("a failed probe names each decorator's verdict, also when one raises", async (t) => {
  const found = await torchPython();
  if (!found) return t.skip('no Python with torch');
  const python = found.python;
  // `wrap` runs at the module's top level only (as torch.fx.wrap): the module imports,
  // the probe's second decorator raises
  const module = [
    'class Reg:',
    '    loaded = False',
    '    def keep(self, f):',
    '        return f',
    '    def wrap(self, f):',
    '        if Reg.loaded:',
    "            raise NotImplementedError('must be called at the top level')",
    '        return f',
    'R = Reg()',
    '@R.keep',
    'def a():',
    '    pass',
    '@R.wrap',
    'def b():',
    '    pass',
    'Reg.loaded = True',
  ].join('\n');
  // the namespace map: one statement of module m at lines 1-16, copied at lines 1-16
  const probe = probeSource(module, { statements: [[1, 16, 'm', 1, 16]] } as unknown as NamespaceMap, [
    { key: 'k:m:10', module: 'm', line: 10, target: 'function' },
    { key: 'k:m:13', module: 'm', line: 13, target: 'function' },
  ])!;
  assert.deepEqual(probe.keys, ['k:m:10', 'k:m:13']);
  const r = spawnSync(python, ['-c', probe.source], { encoding: 'utf8', timeout: 120_000 });
  assert.notEqual(r.status, 0);
  assert.deepEqual(probeVerdicts(r.stderr, probe.keys.length), [true, false], r.stderr.slice(-500));
  assert.equal(probeVerdicts('ImportError: no module named x', 1), null);
  assert.equal(probeVerdicts(r.stderr, 3), null); // not this probe's count of keys
});
