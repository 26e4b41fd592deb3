// Batch validation on torch 2: blocks reaching a function wrapped by
// torch._compile._disable_dynamo (Optimizer.zero_grad), whose first call imports
// torch._dynamo, validated together in one worker give the same results as each block
// validated alone in a fresh pool. The fixture's sibling module imports torch._dynamo at
// import time, so the namespace stage's import of the original brings torch._dynamo in:
// the stage must hide only the repository's modules afterwards, never torch's (a second
// import of torch._dynamo re-registers an operator library and aborts the process).
// Needs a Python with torch 2: NNRAG_TEST_TORCH2_PYTHON, else NNRAG_PYTHON, the PyPI
// environment scripts/setup.sh builds (torch 2.x), or Debian's
// python3 when their torch is 2.x; skips with the reason otherwise. With
// NNRAG_TEST_TORCH2_ROOTFS=DIR the pools run in that root filesystem instead (`nnrag env
// create DIR --debian`: Debian trixie, torch 2.6).
import { defaultEnvDir, envPython } from '../../src/environment/pypi.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { which } from '../../src/validate/environment.js';
import { fixture, tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';

/** An interpreter whose torch is 2.x (or a root filesystem), or the reason there is none. */
function torch2Python(): { python: string } | { rootfs: string } | { skip: string } {
  const tier = needsTorch();
  if (tier) return { skip: tier };
  const rootfs = process.env.NNRAG_TEST_TORCH2_ROOTFS;
  if (rootfs)
    return existsSync(path.join(rootfs, 'usr', 'bin', 'python3'))
      ? { rootfs }
      : { skip: `NNRAG_TEST_TORCH2_ROOTFS=${rootfs} holds no usr/bin/python3` };
  const named = process.env.NNRAG_TEST_TORCH2_PYTHON;
  const cands = named
    ? [named]
    : [process.env.NNRAG_PYTHON, envPython(defaultEnvDir()), '/usr/bin/python3'].filter((p): p is string => !!p);
  for (const py of cands) {
    const r = spawnSync(py, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', timeout: 120_000 });
    const v = r.status === 0 ? r.stdout.trim() : '';
    if (/^2\./.test(v)) return { python: py };
    if (named)
      return {
        skip: `NNRAG_TEST_TORCH2_PYTHON=${named} has no torch 2 (${v || r.stderr?.trim().split('\n').pop() || 'does not run'})`,
      };
  }
  return { skip: 'no Python with torch 2 (set NNRAG_TEST_TORCH2_PYTHON to a virtual environment with torch 2.x)' };
}

const found = torch2Python();
const skip = 'skip' in found ? found.skip : !which('bwrap') ? 'bubblewrap (bwrap) is not installed' : false;

test('torch 2: blocks reaching _disable_dynamo validated in one batch equal the same blocks validated one by one', {
  skip,
}, async () => {
  const target = found as { python: string } | { rootfs: string };
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const repo = fixture('validate', 'dynamo', 'repo');
  // the block of the package's own module first (its zygote imports dynpkg.blocks, not
  // the sibling dynpkg.heads, whose blocks then import their original in the candidate)
  const ids = ['dynpkg.blocks.ZeroA', 'dynpkg.heads.ZeroC', 'dynpkg.blocks.ZeroB', 'dynpkg.heads.ZeroD'];
  const view = (v: {
    stages: Record<string, string>;
    category: string | null;
    error: string | null;
    equivalence?: { status: string };
  }) => JSON.stringify({ stages: v.stages, category: v.category, error: v.error, equivalence: v.equivalence?.status });
  try {
    await api.index(ws, {
      repos: [
        {
          name: 'org/dyn',
          url: null,
          path: repo,
          priority: 1,
          paths: ['dynpkg'],
          description: null,
          packageRoots: null,
        },
      ],
    });
    api.discover(ws);
    const batch = new Map<string, string>();
    const pool = await ValidatorPool.start({ workers: 1, ...target });
    try {
      for (const r of await extractAndValidate(ws, ids, { validator: pool, force: true }))
        batch.set(r.id, view(r.validation as never));
    } finally {
      await pool.close();
    }
    for (const id of ids) {
      const one = await ValidatorPool.start({ workers: 1, ...target });
      try {
        const [r] = await extractAndValidate(ws, [id], { validator: one, force: true });
        assert.equal(batch.get(id), view(r.validation as never), `${id}: batch vs alone`);
      } finally {
        await one.close();
      }
    }
    for (const id of ids) {
      const v = JSON.parse(batch.get(id)!);
      assert.equal(v.category, null, `${id}: ${v.error}`);
      assert.equal(v.stages.equivalence, 'pass', id);
    }
  } finally {
    ws.close();
  }
});
