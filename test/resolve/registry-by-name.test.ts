// Classes looked up by name through a registry (resolve/registry.ts): a config's `type`
// string in copied code that equals a name registered by decorator in a registry the copy holds pulls the
// registered class in (`MODELS.build(dict(type='CELoss'))`, `cfg.setdefault('type',
// 'Smooth')`, `{'type': 'L1'}`), transitively (CELoss builds `Scale`); a docstring's
// mention, a plain string that is no config's type, a name of a registry the copy does not
// hold, and a type in a block that reads no registry pull nothing. The head then builds and runs forward in the real sandbox, in
// both profiles. Real tree-sitter, real SQLite, real torch in the real sandbox (fixture
// test/fixtures/resolve/registry-by-name).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { registeredNames, registrationOf } from '../../src/resolve/registry.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { type FixtureWorkspace, indexedFixture } from '../support/indexed.js';
import { cannotValidate } from '../validate/common.js';

async function workspace(): Promise<FixtureWorkspace> {
  const f = await indexedFixture('resolve/registry-by-name', 'org/byname', ['pkg']);
  api.discover(f.ws);
  return f;
}

test('registration decorators: the names a class is registered under', () => {
  assert.deepEqual(registrationOf('MODELS.register_module()', 'A'), { receiver: ['MODELS'], names: ['A'] });
  assert.deepEqual(registrationOf("MODELS.register_module(name='B')", 'A')?.names, ['B']);
  assert.deepEqual(registrationOf("MODELS.register_module('B', force=True)", 'A')?.names, ['B']);
  assert.deepEqual(registrationOf('registry.MODELS.register_module(name=[\'B\', "C"])', 'A'), {
    receiver: ['registry', 'MODELS'],
    names: ['B', 'C'],
  });
  assert.deepEqual(registrationOf('BACKBONE_REGISTRY.register()', 'A')?.names, ['A']);
  assert.deepEqual(registeredNames('force=True', 'A'), ['A']);
  assert.equal(registrationOf('register_model', 'A'), null);
  assert.equal(registrationOf('torch.no_grad()', 'A'), null);
});

test('a config type naming a class registered in a registry the copy holds copies that class, to a fixed point, in both profiles', async () => {
  const { ws } = await workspace();
  try {
    for (const profile of ['faithful', 'slim'] as const) {
      const block = api.extractText(ws, 'pkg.heads.Head', { profile });
      assert.ok(block.text, block.record.error ?? '');
      for (const s of [
        'class CELoss',
        'class Scale',
        'class SmoothLoss',
        'class L1Loss',
        "@MODELS.register_module(name='Smooth')",
      ])
        assert.ok(block.text.includes(s), `${profile}: missing ${s}\n${block.text}`);
      // a docstring's mention and a plain string (Unused), a registry the copy does not hold (Ghost in OTHER)
      for (const s of ['class Unused', 'class Ghost', 'OTHER'])
        assert.ok(!block.text.includes(s), `${profile}: has ${s}\n${block.text}`);
    }
    // a config type in code that reads no registry is only a string
    const plain = api.extractText(ws, 'pkg.heads.Plain', { profile: 'faithful' }).text;
    assert.ok(!plain.includes('class CELoss') && !plain.includes('MODELS'), plain);
  } finally {
    ws.close();
  }
});

const skip = await cannotValidate(true);

test('a head that builds its losses by type name instantiates and runs forward in the sandbox', {
  skip: skip ?? false,
}, async () => {
  const { ws, dir } = await workspace();
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    for (const profile of ['faithful', 'slim'] as const) {
      const [r] = await extractAndValidate(ws, ['pkg.heads.Head'], {
        validator: pool,
        out: path.join(dir, `library-${profile}`),
        profile,
      });
      const stages = (r.validation as { stages: Record<string, string> }).stages;
      assert.equal(stages.forward, 'pass', `${profile}: ${JSON.stringify(r.validation)}`);
      assert.equal(r.ok, true, profile);
    }
  } finally {
    await pool.close();
    ws.close();
  }
});
