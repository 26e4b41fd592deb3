// Providers and warm runs (issue 27): a block without witnesses of its own is sent one
// witness of every other witnessed class (`providers`); the harness says which of its
// constructor parameters those could fill (`providersWanted`, source_provider.wanted), so
// that a change of the providers re-validates only the blocks they could touch
// (pipeline/reuse.ts). Real validation in the sandbox for the harness's answer; the
// reuse decision itself on digests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Blobs, inputDigests, inputsChanged, providersRelevant } from '../../src/pipeline/reuse.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);

const source = `import torch
from torch import nn


class Trunk(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.attn_layers = nn.Linear(dim, dim)

    def forward(self, x):
        return self.attn_layers(x)


class Plain(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)


class Wrapper(nn.Module):
    def __init__(self, net, scale=2.0):
        super().__init__()
        self.net = net
        self.head = nn.Linear(net.dim, 3)
        self.scale = scale

    def forward(self, x):
        return self.head(self.net.attn_layers(x)) * self.scale
`;

test('the harness names the parameters the providers could fill: none for a class without one', {
  skip: skip ?? false,
}, async () => {
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    const providers = { 'pw.Trunk': { args: [], kwargs: { dim: 8 }, params: 72, entry: 'e' } };
    const plain = await pool.validate({
      id: 'pw.Plain',
      source,
      className: 'Plain',
      providers,
      witnessRepoTops: ['pw'],
    });
    assert.equal(plain.stages.instantiate, 'pass', `${plain.error}`);
    assert.deepEqual(plain.providersWanted, []);
    assert.equal(providersRelevant(plain), false);
    const wrapper = await pool.validate({
      id: 'pw.Wrapper',
      source,
      className: 'Wrapper',
      providers,
      witnessRepoTops: ['pw'],
    });
    assert.deepEqual(wrapper.providersWanted, ['net']);
    assert.equal(providersRelevant(wrapper), true);
    // without providers the harness says nothing
    const alone = await pool.validate({ id: 'pw.Plain', source, className: 'Plain' });
    assert.equal(alone.providersWanted, undefined);
  } finally {
    await pool.close();
  }
});

test('stored inputs: changed providers count only where they were stored (a parameter could take one)', () => {
  const parts = { code: 'c', env: 'e', options: {}, layout: 'l', request: { callSites: [] } };
  const before = inputDigests({ ...parts, providers: { 'pw.Trunk': { args: [1] } } });
  const after = inputDigests({ ...parts, providers: { 'pw.Trunk': { args: [2] } } });
  assert.notEqual(before.providers, after.providers);
  const blobs = new Blobs(null as never); // no files to look up
  // stored without providers (none could be used): reused
  const { providers: _unused, ...without } = before;
  assert.equal(inputsChanged({ ...without, files: [] }, after, blobs), null);
  // stored with them: validated again
  assert.equal(inputsChanged({ ...before, files: [] }, after, blobs), 'the providers changed');
  assert.equal(inputsChanged({ ...before, files: [] }, before, blobs), null);
  // which part of the request changed
  const w1 = inputDigests({ ...parts, sites: { callSites: [] }, witnesses: { witnesses: [1] } });
  const w2 = inputDigests({ ...parts, request: { x: 1 }, sites: { callSites: [] }, witnesses: { witnesses: [2] } });
  assert.equal(inputsChanged({ ...w1, files: [] }, w2, blobs), "the class's witnesses changed");
  // a result from before the harness said: instantiated, so counted in; import failed: not
  assert.equal(providersRelevant({ stages: { instantiate: 'pass' } as never }), true);
  assert.equal(providersRelevant({ stages: { import: 'fail' } as never }), false);
});
