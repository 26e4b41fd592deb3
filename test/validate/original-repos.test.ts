// Equivalence needs the original to import: its sys.path holds the block's repository
// first, then the indexed repositories its closure copied from and those its module
// imports at top level (a research repository built on a library, as Swin-Transformer
// on timm), as installed packages would be.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { tempDir } from '../helpers.js';
import { cannotValidate } from './common.js';

const skip = await cannotValidate(true);

function writeTree(root: string, files: Record<string, string>) {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
}

test('the original imports the other repositories it needs, so equivalence runs', { skip: skip ?? false }, async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  // a library repository and a research repository that builds on it
  writeTree(path.join(dir, 'lib'), {
    'blib/__init__.py': '',
    'blib/layers.py':
      'import torch.nn as nn\n\nclass Scale(nn.Module):\n    def __init__(self, s=2.0):\n        super().__init__()\n        self.s = s\n\n    def forward(self, x):\n        return x * self.s\n\n\ndef helper():\n    return 1\n',
  });
  writeTree(path.join(dir, 'research'), {
    'models/__init__.py': '',
    // uses the library's class (copied into the closure) …
    'models/net.py':
      'import torch.nn as nn\nfrom blib.layers import Scale\n\nclass Net(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n        self.scale = Scale()\n\n    def forward(self, x):\n        return self.scale(self.fc(x))\n',
    // … and imports it without needing any of it
    'models/plain.py':
      'import torch.nn as nn\nfrom blib.layers import helper  # noqa: F401\n\nclass Plain(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.fc(x)\n',
  });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    const spec = (name: string, p: string, paths: string[]) => ({
      name,
      url: null,
      path: p,
      priority: 1,
      paths,
      description: null,
      packageRoots: null,
    });
    await api.index(ws, {
      repos: [
        spec('org/research', path.join(dir, 'research'), ['models']),
        spec('org/lib', path.join(dir, 'lib'), ['blib/__init__.py']),
      ],
    });
    api.discover(ws);
    const pool = await ValidatorPool.start({ workers: 1 });
    try {
      let before: number[] = [];
      // several rounds in one worker: the roots live under the temporary folder, which the
      // sandbox replaces with its scratch tmpfs and mounts them on top; emptying the
      // scratch between candidates must leave those mounts alone, not discard the worker
      for (let round = 0; round < 3; round++) {
        const recs = await extractAndValidate(ws, ['models.net.Net', 'models.plain.Plain'], {
          validator: pool,
          force: true,
        });
        for (const r of recs) {
          const v = r.validation as {
            stages: Record<string, string>;
            equivalence?: { reason?: string };
            category: string | null;
          };
          assert.equal(v.stages.equivalence, 'pass', `${r.id}: ${v.category} ${JSON.stringify(v.equivalence)}`);
        }
        // the first request restarts the worker with these roots bound; none after it
        if (round === 0) before = pool.workerPids();
      }
      assert.deepEqual(pool.workerPids(), before, 'the same worker served every request');
    } finally {
      await pool.close();
    }
  } finally {
    ws.close();
  }
});
