// Decoding Python source bytes (PEP 3120 default UTF-8, PEP 263 coding cookies, BOM,
// undecodable bytes indexed with U+FFFD and a problem).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codingCookie, decodePython } from '../../src/indexer/source.js';

const b = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

test('UTF-8 by default, BOM dropped', () => {
  assert.deepEqual(decodePython(b('x = "é"\n')), { text: 'x = "é"\n', encoding: 'utf-8', problem: null });
  assert.equal(decodePython(b([0xef, 0xbb, 0xbf], 'x = 1\n')).text, 'x = 1\n');
});

test('PEP 263 cookie on line 1, or line 2 after a comment line', () => {
  assert.equal(codingCookie(b('# -*- coding: latin-1 -*-\n')), 'latin-1');
  assert.equal(codingCookie(b('#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n')), 'cp1252');
  assert.equal(codingCookie(b('x = 1\n# coding: latin-1\n')), null, 'line 2 only counts after a blank/comment line 1');
  const latin = decodePython(b('# coding: latin-1\nS = "caf', [0xe9], '"\n'));
  assert.equal(latin.text, '# coding: latin-1\nS = "café"\n');
  assert.equal(latin.encoding, 'latin-1');
  assert.equal(latin.problem, null);
});

test('invalid UTF-8: replacement characters and a problem naming the line', () => {
  const d = decodePython(b('A = 1\n\nS = "', [0xff, 0xfe], '"\n'));
  assert.equal(d.text, 'A = 1\n\nS = "\uFFFD\uFFFD"\n');
  assert.equal(d.problem?.kind, 'invalid-utf8');
  assert.match(d.problem!.message, /line 3/);
});

test('unknown coding cookie: decoded as UTF-8 with a problem', () => {
  const d = decodePython(b('# coding: klingon\nX = 1\n'));
  assert.equal(d.text, '# coding: klingon\nX = 1\n');
  assert.equal(d.problem?.kind, 'unknown-encoding');
});
