// The harness bundle's load order (environment.ts harnessLoadOrder): each module of
// nnrag_harness after the modules it imports at its top level, the package first, and a
// cycle among top-level imports refused, so no module needs an import hidden in a
// function to survive the order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harnessLoadOrder, harnessSource } from '../../src/validate/environment.js';

test('the bundled harness package: every module after the ones it imports at top level', () => {
  const text = harnessSource().text;
  const bundle = JSON.parse(text.slice('_NNRAG_BUNDLE = '.length, text.indexOf('\n'))) as Record<string, string>;
  const names = Object.keys(bundle).map((n) => (n === 'nnrag_harness' ? '__init__' : n.slice('nnrag_harness.'.length)));
  assert.equal(names[0], '__init__');
  const at = new Map(names.map((n, i) => [n, i]));
  for (const [full, src] of Object.entries(bundle)) {
    const name = full === 'nnrag_harness' ? '__init__' : full.slice('nnrag_harness.'.length);
    for (const m of src.matchAll(/^from (?:\.|nnrag_harness\.?)(\w*) import ([^\n#]+)/gm)) {
      const deps = m[1] ? [m[1]] : m[2].split(',').map((x) => x.trim().split(/\s+/)[0]);
      for (const d of deps.filter((x) => at.has(x) && x !== name))
        assert.ok(at.get(d)! < at.get(name)!, `${name} imports ${d} at top level but loads first`);
    }
  }
  // the workers and the argument sources load after what they share
  for (const [low, high] of [
    ['channel', 'zygote'],
    ['zygote', 'worker'],
    ['stash', 'stages'],
    ['sources', 'source_guess'],
    ['source_guess', 'candidates'],
  ]) {
    assert.ok(at.get(low)! < at.get(high)!, `${low} before ${high}`);
  }
});

test('top-level imports in any form count; indented ones do not; a cycle is refused', () => {
  const texts = new Map([
    ['__init__', 'X = 1\n'],
    ['a', 'from nnrag_harness.c import f\nimport nnrag_harness.b\n'],
    ['b', 'from . import (\n    c,\n)\ndef g():\n    from . import a\n'],
    ['c', 'from nnrag_harness import X\n'],
  ]);
  assert.deepEqual(harnessLoadOrder(texts), ['__init__', 'c', 'b', 'a']);
  texts.set('c', 'from .a import f\n');
  assert.throws(() => harnessLoadOrder(texts), /cycle among: a, b, c/);
});
