// Which queued request an idle validation worker takes (pool.ts nextRequest): one with
// the roots it has; else, restarted, one whose roots no other worker has, so that a
// repository with few requests is run by one worker instead of each worker paying a
// start and the repository's import for it; else the head of the queue.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nextRequest } from '../../src/validate/pool.js';

const A = ['/r/a'];
const B = ['/r/b'];
const C = ['/r/c'];
const q = (...roots: string[][]) => roots.map((r) => ({ roots: r }));

test('a worker takes a request of its own roots first', () => {
  assert.equal(nextRequest(new Set(B), [new Set(A)], q(A, C, B)), 2);
});

test('a restarted worker takes the roots no other worker has', () => {
  // the other worker has b: this one is restarted for c, not for b's next request
  assert.equal(nextRequest(new Set(A), [new Set(B)], q(B, B, B, C)), 3);
  // roots with several entries are the same roots in any order
  assert.equal(nextRequest(new Set(['/r/x', '/r/y']), [new Set(['/r/y', '/r/b'])], q(['/r/b', '/r/y'], C)), 1);
});

test('the head when every queued roots has a worker', () => {
  assert.equal(nextRequest(new Set(A), [new Set(B)], q(B, B)), 0);
  assert.equal(nextRequest(new Set(A), [], q(B, C)), 0);
});
