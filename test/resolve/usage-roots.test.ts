// Usage roots (issue 26): definitions a block's code never names but its validated
// arguments do become extra roots of its closure, so the emitted module defines them for
// the usage line; the header says so. Without roots the module is the block's closure
// alone. usageRootsOf maps the harness's `usageNeeds` to definitions of the corpus:
// names the module resolves (private ones too, no dunder), nothing else. (The sandboxed, end-to-end path is in
// test/export/usage.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { usageRootsOf } from '../../src/pipeline/pipeline.js';
import { indexedFixture } from '../support/indexed.js';

const STEM = 'tinygpt.roots.Stem';
const WRAPPED = 'tinygpt.roots.Wrapped';

describe('usage roots', () => {
  it('add the definitions the usage line names to the module, with a header line each', async () => {
    const { ws } = await indexedFixture('usage', 'org/usage', ['tinygpt']);
    const plain = api.extractText(ws, STEM, { profile: 'faithful' });
    assert.doesNotMatch(plain.text, /class FrozenNorm/);
    assert.equal(plain.record.emission.usageRoots, undefined);

    const roots = usageRootsOf(ws, STEM, [['tinygpt.norms', 'FrozenNorm']]);
    assert.deepEqual(
      roots.map((r) => `${r.mod.name}.${r.name}`),
      ['tinygpt.norms.FrozenNorm'],
    );
    for (const profile of ['faithful', 'slim'] as const) {
      const withRoots = api.extractText(ws, STEM, { profile, roots });
      assert.match(withRoots.text, /^class FrozenNorm\(nn\.Module\):/m, profile);
      assert.match(withRoots.text, /^class Stem\(nn\.Module\):/m);
      assert.match(
        withRoots.text,
        /^# for the usage line: FrozenNorm \(tinygpt\.norms\.FrozenNorm\), which the validated arguments name; the block's code does not$/m,
      );
      assert.deepEqual(withRoots.record.emission.usageRoots, ['tinygpt.norms.FrozenNorm']);
      assert.ok(
        withRoots.record.provenance.some((p) => p.module === 'tinygpt.norms'),
        'the provenance lists the file the root comes from',
      );
      // only what was asked: the other definitions of norms.py stay out
      assert.doesNotMatch(withRoots.text, /class TwoLayer|class Gate/);
    }
  });

  it("a root's own closure comes along (TwoLayer's default act=nn.ReLU needs torch.nn only)", async () => {
    const { ws } = await indexedFixture('usage', 'org/usage', ['tinygpt']);
    const roots = usageRootsOf(ws, WRAPPED, [
      ['tinygpt.norms', 'TwoLayer'],
      ['tinygpt.norms', 'Gate'],
    ]);
    const em = api.extractText(ws, WRAPPED, { profile: 'faithful', roots });
    assert.match(em.text, /^class TwoLayer\(nn\.Module\):/m);
    assert.match(em.text, /^class Gate\(nn\.Module\):/m);
    assert.match(em.text, /^import torch\.nn as nn$/m);
    assert.equal(em.record.ok, true, JSON.stringify(em.record.diagnostics));
    assert.deepEqual(em.record.emission.usageRoots, ['tinygpt.norms.TwoLayer', 'tinygpt.norms.Gate']);
  });

  it('usageRootsOf keeps the definitions the corpus has, private ones too, each once', async () => {
    const { ws } = await indexedFixture('usage', 'org/usage', ['tinygpt']);
    const got = usageRootsOf(ws, STEM, [
      ['tinygpt.norms', 'FrozenNorm'],
      ['tinygpt.norms', 'FrozenNorm'],
      // a method's qualified name: its class is the root
      ['tinygpt.norms', 'TwoLayer.forward'],
      // a private name: a root too (the usage line imports it by name, export.ts usageImports)
      ['tinygpt.layers', '_Scaled'],
      // a dunder name never: a snippet names none
      ['tinygpt.norms', '__name__'],
      // not indexed, not defined
      ['elsewhere.mod', 'Thing'],
      ['tinygpt.norms', 'Missing'],
    ]);
    assert.deepEqual(
      got.map((r) => `${r.mod.name}.${r.name}`),
      ['tinygpt.norms.FrozenNorm', 'tinygpt.norms.TwoLayer', 'tinygpt.layers._Scaled'],
    );
  });
});
