// Equivalence needs the original to import: its sys.path holds the block's repository
// first, then the indexed repositories its closure copied from and those its module
// imports at top level (a research repository built on a library, as Swin-Transformer
// on timm), as installed packages would be.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/api.js';
import { extractAndValidate } from '../../src/pipeline.js';
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
    'blib/layers.py': 'import torch.nn as nn\n\nclass Scale(nn.Module):\n    def __init__(self, s=2.0):\n        super().__init__()\n        self.s = s\n\n    def forward(self, x):\n        return x * self.s\n\n\ndef helper():\n    return 1\n',
  });
  writeTree(path.join(dir, 'research'), {
    'models/__init__.py': '',
    // uses the library's class (copied into the closure) …
    'models/net.py': 'import torch.nn as nn\nfrom blib.layers import Scale\n\nclass Net(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n        self.scale = Scale()\n\n    def forward(self, x):\n        return self.scale(self.fc(x))\n',
    // … and imports it without needing any of it
    'models/plain.py': 'import torch.nn as nn\nfrom blib.layers import helper  # noqa: F401\n\nclass Plain(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.fc(x)\n',
  });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    const spec = (name: string, p: string, paths: string[]) => ({ name, url: null, path: p, priority: 1, paths, description: null, packageRoots: null });
    await api.index(ws, { repos: [spec('org/research', path.join(dir, 'research'), ['models']), spec('org/lib', path.join(dir, 'lib'), ['blib/__init__.py'])] });
    api.discover(ws);
    const recs = await extractAndValidate(ws, ['models.net.Net', 'models.plain.Plain'], { pool: { workers: 1 } });
    for (const r of recs) {
      const v = r.validation as { stages: Record<string, string>; equivalence?: { reason?: string } };
      assert.equal(v.stages.equivalence, 'pass', `${r.id}: ${JSON.stringify(v.equivalence)}`);
    }
  } finally {
    ws.close();
  }
});
