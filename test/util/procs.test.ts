// A process tree's CPU time from /proc (src/util/procs.ts) and the validation worker's
// start deadline built on it (startOverdue in src/validate/pool.ts): a start that keeps
// computing on a loaded machine gets more time, one that waits on nothing does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { treeCpuMs } from '../../src/util/procs.js';
import { startOverdue } from '../../src/validate/pool.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("a tree's CPU time counts a busy grandchild and not an idle parent", async () => {
  // sh (idle, waiting) -> sh -c (busy loop): the busy process is a grandchild of the spawned one
  // its own process group (killed whole below); the loop also ends by itself (a bounded
  // count) should the test die before it
  const p = spawn('/bin/sh', ['-c', "/bin/sh -c 'i=0; while [ $i -lt 30000000 ]; do i=$((i+1)); done' & wait"], {
    stdio: 'ignore',
    detached: true,
  });
  try {
    await sleep(300);
    const a = treeCpuMs(p.pid!);
    assert.notEqual(a, null);
    await sleep(1200);
    const b = treeCpuMs(p.pid!)!;
    // the grandchild computed for most of 1.2 s on an idle core; at least a share on a busy machine
    assert.ok(b - a! >= 50, `tree CPU grew by ${b - a!} ms`);
  } finally {
    process.kill(-p.pid!, 'SIGKILL');
  }
  assert.equal(treeCpuMs(2 ** 22 + 12345), null); // no such process
});

test('a start is given more time only while it computes', () => {
  // before the wall timeout: wait, whatever the readings
  assert.equal(startOverdue(60000, []), null);
  // no /proc readings: the plain wall timeout
  assert.match(startOverdue(120000, [])!, /did not start within 120000 ms$/);
  // computing at a quarter of a CPU (a loaded machine): more time
  const busy: [number, number][] = [];
  for (let w = 0; w <= 300000; w += 5000) busy.push([w, w / 4]);
  assert.equal(startOverdue(300000, busy), null);
  // waiting on nothing for the last window: stopped at the wall timeout
  const idle: [number, number][] = busy
    .slice(0, 17)
    .concat(Array.from({ length: 8 }, (_, i): [number, number] => [85000 + i * 5000, 20000 + i]));
  assert.match(startOverdue(120000, idle)!, /waits on something/);
  // computing, but past the CPU budget or the wall cap
  assert.match(startOverdue(600000, [[595000, 121000]])!, /of CPU time/);
  assert.match(startOverdue(1200000, [[1195000, 100000]])!, /overloaded/);
});
