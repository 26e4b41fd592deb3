// `nnrag env create`: a folder the sandbox's user cannot enter is refused before
// debootstrap runs (minutes of work that would end unusable), with what to do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unreachableForSandbox } from '../../src/util/fs.js';
import { createRootfs } from '../../src/environment/rootfs.js';
import { NnragError } from '../../src/util/errors.js';

const root = process.getuid?.() === 0;

test('a root filesystem under a folder uid 65534 cannot enter is refused at once', {
  skip: !root && 'the sandbox runs as the calling user when nnrag is not root',
}, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nnrag-env-')); // mode 0700, like mktemp -d
  try {
    const target = path.join(dir, 'trixie');
    assert.equal(unreachableForSandbox(target), dir);
    const t0 = performance.now();
    await assert.rejects(
      createRootfs(target),
      (e: unknown) => e instanceof NnragError && e.message.includes(dir) && /chmod o\+x/.test(e.message),
    );
    assert.ok(performance.now() - t0 < 2000, 'refused before any debootstrap work');
    chmodSync(dir, 0o755);
    assert.equal(unreachableForSandbox(target), null);
    mkdirSync(target, { mode: 0o700 });
    chmodSync(target, 0o700);
    assert.equal(unreachableForSandbox(target), target, 'the folder itself counts');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
