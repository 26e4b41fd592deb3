// Module-level statements that mutate a copied binding in place (closure.ts,
// Corpus.mutatorsOf): `MODELS.register_module('BN1d', module=nn.BatchNorm1d)`,
// `MODELS.aliases['BN'] = 'BN1d'` and a loop over a literal list of registrations
// (`for module in [nn.ReLU, nn.ELU]: MODELS.register_module(module=module)`) run at import (Language Reference §7.1), so a copy whose
// code reads the registry copies them with it, in both profiles, and the block built from
// a config dict instantiates and runs forward in the real sandbox; a registry the kept code
// never reads keeps none of them (slim drops it with its decorators).
// Real tree-sitter, real SQLite, real torch in the real sandbox (fixture
// test/fixtures/resolve/registry-method-calls).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { type FixtureWorkspace, fixtureWorkspace, indexedFixture } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

const REGISTRATIONS = [
  "MODELS.register_module('Id', module=nn.Identity)",
  "MODELS.register_module('BN1d', module=nn.BatchNorm1d)",
  "MODELS.register_module('LN', module=nn.LayerNorm)",
  "MODELS.aliases['BN'] = 'BN1d'",
  'for module in [nn.ReLU, nn.ELU]:\n    MODELS.register_module(module=module)',
];

async function workspace(): Promise<FixtureWorkspace> {
  const f = await indexedFixture('resolve/registry-method-calls', 'org/reg', ['pkg']);
  api.discover(f.ws);
  return f;
}

test('registrations by module-level method calls are copied exactly when the kept code reads the registry, in both profiles', async () => {
  const { ws } = await workspace();
  try {
    for (const profile of ['faithful', 'slim'] as const) {
      const block = api.extractText(ws, 'pkg.a.Block', { profile });
      assert.ok(block.text, block.record.error ?? '');
      for (const s of REGISTRATIONS) assert.ok(block.text.includes(s), `${profile}: missing ${s}\n${block.text}`);
      // the other registry and its calls (and a call of a builtin) are not the block's
      // nor a loop over a computed list (GELU)
      for (const s of ['OTHER', 'class Unused', "print('norm imported')", 'GELU'])
        assert.ok(!block.text.includes(s), `${profile}: has ${s}`);
    }
    // Plain is only registered: faithful keeps its decorator, so the registry and the
    // calls of the module that defines it; slim removes the decorator and nothing else
    // reads the registry, so none of the calls is copied
    const faithful = api.extractText(ws, 'pkg.a.Plain', { profile: 'faithful' }).text;
    assert.ok(faithful.includes("MODELS.register_module('Id', module=nn.Identity)"), faithful);
    assert.ok(!faithful.includes('BatchNorm1d'), faithful);
    const slim = api.extractText(ws, 'pkg.a.Plain', { profile: 'slim' }).text;
    const body = slim
      .split('\n')
      .filter((l) => !l.startsWith('#')) // the header lists the removed decorator
      .join('\n');
    for (const s of ['MODELS', 'register_module', 'class Registry']) assert.ok(!body.includes(s), `slim has ${s}`);
  } finally {
    ws.close();
  }
});

test('registrations on a registry an extern `from … import` binds are copied with the code that reads it; calls on an imported module are not', async () => {
  const { ws, spec } = fixtureWorkspace('registry-extern', 'org/ext', ['pkg']);
  try {
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    for (const profile of ['faithful', 'slim'] as const) {
      const block = api.extractText(ws, 'pkg.conv.Block', { profile });
      assert.ok(block.text, block.record.error ?? '');
      assert.ok(block.text.includes('from extreg.registry import MODELS'), block.text);
      for (const s of [
        "MODELS.register_module('Conv2d', module=nn.Conv2d)",
        "MODELS.register_module('Conv', module=nn.Conv2d)",
      ])
        assert.ok(block.text.includes(s), `${profile}: missing ${s}\n${block.text}`);
      assert.ok(!block.text.includes('os.environ.setdefault'), `${profile}: ${block.text}`);
    }
  } finally {
    ws.close();
  }
});

const skip = await cannotValidate(true);

test('a block that builds its norm from a config through the registry instantiates and runs forward in the sandbox', {
  skip: skip ?? false,
}, async () => {
  const { ws, dir } = await workspace();
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    for (const profile of ['faithful', 'slim'] as const) {
      const [r] = await extractAndValidate(ws, ['pkg.a.Block'], {
        validator: pool,
        out: path.join(dir, `library-${profile}`),
        profile,
      });
      const stages = (r.validation as { stages: Record<string, string> }).stages;
      assert.equal(stages.instantiate, 'pass', `${profile}: ${JSON.stringify(r.validation)}`);
      assert.equal(stages.forward, 'pass', `${profile}: ${JSON.stringify(r.validation)}`);
      assert.equal(r.ok, true, profile);
    }
  } finally {
    await pool.close();
    ws.close();
  }
});
