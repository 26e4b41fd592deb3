// A user's `--args` / `--input-shape @FILE` (user-inputs.ts): floats written with a
// fraction stay floats on their way to the harness (JSON.parse alone reads `2.0` as the
// number 2, which Python then receives as the int 2), in the encoding values.py decodes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { markIntegralFloats, parseInputShapes, userWitness } from '../../src/validate/user-inputs.js';
import { tempDir } from '../helpers.js';

test('integral floats of --args reach the harness as floats; integers, strings and encoded values unchanged', () => {
  const w = userWitness(
    '{"dim": 64, "scale": 2.0, "eps": 1e-6, "big": 1E3, "ratios": [0.5, 1.0, -2.0], "name": "2.0"}',
    undefined,
  );
  assert.deepEqual(w.args, []);
  assert.deepEqual(w.kwargs, {
    dim: 64,
    scale: { $float: '2.0' },
    eps: 1e-6,
    big: { $float: '1E3' },
    ratios: [0.5, { $float: '1.0' }, { $float: '-2.0' }],
    name: '2.0',
  });
  // positional, and the {args, kwargs} form of a record
  assert.deepEqual(userWitness('[8, 2.0]', undefined).args, [8, { $float: '2.0' }]);
  const both = userWitness('{"args": [1.0], "kwargs": {"p": {"q": 3.0, "s": "a\\"1.0"}}}', undefined);
  assert.deepEqual(both.args, [{ $float: '1.0' }]);
  assert.deepEqual(both.kwargs, { p: { $dict: { q: { $float: '3.0' }, s: 'a"1.0' } } });
  // a value written already encoded keeps its numbers (a tensor's statistics)
  const enc = userWitness('{"x": {"$tensor": [2, 3], "dtype": "float32", "min": 0.0, "max": 1.0}}', undefined);
  assert.deepEqual(enc.kwargs.x, { $tensor: [2, 3], dtype: 'float32', min: 0, max: 1 });
});

test('markIntegralFloats leaves strings and other numbers as written', () => {
  assert.equal(markIntegralFloats('[1, 2.5, -0.25e1, "3.0", "\\\\"]'), '[1, 2.5, -0.25e1, "3.0", "\\\\"]');
  assert.equal(markIntegralFloats('{"a":4.0}'), '{"a":"\\u0000float:4.0"}');
});

test('input files: shapes may be written with floats, encoded inputs keep their numbers', () => {
  const dir = tempDir();
  const file = path.join(dir, 'inputs.json');
  writeFileSync(file, '[[1, 3, 8, 8], {"$tensor": [1, 4], "dtype": "int64", "max": 9.0}]');
  assert.deepEqual(parseInputShapes([`@${file}`]), [
    { $tensor: [1, 3, 8, 8], dtype: 'float32' },
    { $tensor: [1, 4], dtype: 'int64', max: 9 },
  ]);
});
