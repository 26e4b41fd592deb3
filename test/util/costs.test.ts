// The cost table (src/util/costs.ts): phases accumulate per repository (count, wall, CPU
// when measured in this process, none for work timed elsewhere), and the text sums each
// phase over the repositories before listing them one by one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Costs, costText } from '../../src/util/costs.js';

test('phases accumulate per repository; work done elsewhere has no CPU figure', async () => {
  const c = new Costs();
  c.add('validate slim forward', 'a', 100);
  c.add('validate slim forward', 'a', 50);
  c.add('validate slim forward', 'b', 30);
  let x = 0;
  c.time('emission faithful', 'a', () => {
    for (let i = 0; i < 2e6; i++) x += i;
  });
  await c.timeAsync('harvest', 'b', () => new Promise((r) => setTimeout(r, 20)));
  c.count('blocks reused', 'a', 3);
  const t = c.table('extract + validate');
  const row = (phase: string, repo: string) => t.rows.find((r) => r.phase === phase && r.repo === repo)!;
  assert.deepEqual(row('validate slim forward', 'a'), {
    phase: 'validate slim forward',
    repo: 'a',
    count: 2,
    wallMs: 150,
    cpuMs: null,
  });
  assert.equal(row('validate slim forward', 'b').wallMs, 30);
  assert.ok(row('emission faithful', 'a').cpuMs! > 0 && x > 0);
  assert.ok(row('harvest', 'b').wallMs >= 15 && row('harvest', 'b').cpuMs === null);
  assert.equal(row('blocks reused', 'a').count, 3);
  const text = costText(t);
  // the phase summed over both repositories: 180 ms in 3 runs
  assert.ok(
    text.some((l) => /validate slim forward\s+3× +0\.2 s wall +— CPU/.test(l)),
    text.join('\n'),
  );
  assert.ok(text.includes('a:') && text.includes('b:'));
});
