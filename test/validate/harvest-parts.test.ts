// What of a module a harvest step can have seen (witness/parts.ts): its skeleton (no
// comments, blank lines or function bodies, but decorated functions whole, docstrings and
// `def` lines kept) and the bodies of the functions named (co_qualnames that ran); and a
// source's code at its lines (codeAtLines, the key of a stored validation).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initParser } from '../../src/parse/parser.js';
import { bodyOf, codeAtLines, codeParts, partDigest } from '../../src/validate/witness/parts.js';

await initParser();

const SOURCE = `"""A module."""
import torch

SCALE = 2


def helper(x):
    """Doubles."""
    return x * SCALE


@torch.jit.script
def scripted(x):
    return x + 1


class Block:
    width = 4

    def forward(self, x, k=3):
        def inner(y):
            return y - 1

        return inner(x) * k

    def unused(self):
        return 0
`;

const digest = (src: string, names: string[]) => {
  const p = codeParts(src);
  assert.ok(p, 'parses');
  return partDigest(p, names);
};

test('the cut bodies are module- and class-level undecorated functions, by qualified name', () => {
  const p = codeParts(SOURCE)!;
  assert.deepEqual([...p.bodies.keys()].sort(), ['Block.forward', 'Block.unused', 'helper']);
  assert.match(p.skeleton, /"""Doubles\."""/);
  assert.match(p.skeleton, /def forward\(self, x, k=3\):/);
  assert.match(p.skeleton, /return x \+ 1/, 'a decorated function stays whole');
  assert.doesNotMatch(p.skeleton, /inner/);
  assert.equal(bodyOf('Block.forward.<locals>.inner'), 'Block.forward');
  assert.equal(bodyOf('<lambda>'), '');
  assert.equal(bodyOf('Block.<listcomp>'), 'Block');
});

test('comments, blank lines and the bodies of functions not named leave the digest', () => {
  const names = ['Block.forward', 'Block.forward.<locals>.inner', 'Block'];
  const d = digest(SOURCE, names);
  const commented = SOURCE.replace(
    '        return inner(x) * k',
    '        # why\n\n        return inner(x) * k  # k',
  ).concat('\n# the end\n');
  assert.equal(digest(commented, names), d);
  assert.equal(digest(SOURCE.replace('return 0', 'return 1'), names), d, 'Block.unused did not run');
  assert.equal(digest(SOURCE.replace('return x * SCALE', 'return x * SCALE * 1'), names), d);
});

test('the bodies named, the skeleton and decorated functions change the digest', () => {
  const names = ['Block.forward.<locals>.inner', 'helper'];
  const d = digest(SOURCE, names);
  assert.notEqual(
    digest(SOURCE.replace('return y - 1', 'return y - 2'), names),
    d,
    'a nested function: its outer body',
  );
  assert.notEqual(digest(SOURCE.replace('return x * SCALE', 'return x + SCALE'), names), d);
  assert.notEqual(digest(SOURCE.replace('SCALE = 2', 'SCALE = 3'), names), d, 'a top-level statement');
  assert.notEqual(digest(SOURCE.replace('k=3', 'k=5'), names), d, 'a default');
  assert.notEqual(digest(SOURCE.replace('width = 4', 'width = 5'), names), d, 'a class attribute');
  assert.notEqual(digest(SOURCE.replace('return x + 1', 'return x + 2'), names), d, 'a decorated body');
  assert.notEqual(digest(SOURCE.replace('"""Doubles."""', '"""Triples."""'), names), d, 'a docstring');
  assert.notEqual(
    digest(SOURCE.replace('        return inner(x) * k', '    return inner(x) * k'), []),
    digest(SOURCE, []),
  );
});

test('a file that does not parse has no parts', () => {
  assert.equal(codeParts('def f(:\n  return\n'), null);
});

test('codeAtLines: comments edited in place or added at the end leave it; moved lines and code change it', () => {
  const d = codeAtLines(SOURCE);
  assert.ok(d);
  assert.equal(codeAtLines(`${SOURCE}\n# the end\n\n`), d);
  assert.equal(codeAtLines(SOURCE.replace('SCALE = 2', 'SCALE = 2  # two')), d);
  assert.notEqual(codeAtLines(`# moved\n${SOURCE}`), d, 'a line above the code moves it');
  assert.notEqual(codeAtLines(SOURCE.replace('return 0', 'return 1')), d);
  assert.notEqual(codeAtLines(SOURCE.replace('"""Doubles."""', '"""Triples."""')), d);
});
