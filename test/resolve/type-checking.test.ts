// The body of `if TYPE_CHECKING:` never runs (typing.TYPE_CHECKING is False at run time,
// PEP 484): a name it imports is bound only for type checkers, so nothing it names is
// copied (its `else` runs, and what that imports is). The statement stays, its import
// written absolute, and the standalone module imports and runs in the real Python
// without the class it names.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { indexedFixture } from '../support/indexed.js';
import { assertRan, checkModules } from '../support/python.js';

describe('imports under if TYPE_CHECKING', () => {
  it('copy nothing: the statement stays with its import absolute, and the module runs', async () => {
    const { ws, dir } = await indexedFixture('typecheck', 'org/typecheck', ['tcpkg']);
    try {
      for (const profile of ['faithful', 'slim'] as const) {
        const e = api.extractText(ws, 'tcpkg.blocks.Block', { profile });
        assert.ok(e.text, e.record.error);
        assert.doesNotMatch(e.text, /class Trainer|json/, `${profile} copied what only a type checker reads`);
        assert.match(e.text, /^if TYPE_CHECKING:\n {4}from tcpkg\.heavy import Trainer\nelse:\n/m);
        // the else branch runs: what it imports is copied
        assert.match(e.text, /^def scale\(dim\):$/m);
        assert.match(
          e.text,
          /^def attach\(model: nn\.Module, trainer: Optional\['Trainer'\] = None\) -> Optional\['Trainer'\]:$/m,
        );
        assert.ok(!e.record.externs.some((x) => JSON.stringify(x).includes('tcpkg')), JSON.stringify(e.record.externs));
        assert.ok(!e.record.diagnostics.some((d) => d.severity === 'error'), JSON.stringify(e.record.diagnostics));
        const file = path.join(dir, 'out', `${profile}.py`);
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, e.text);
        const r = checkModules([
          {
            name: profile,
            file,
            run: 'import torch\nb = m.Block()\nassert b(torch.ones(1, 4)).shape == (1, 4) and b.k == 0.25\nassert not hasattr(m, "Trainer")',
          },
        ]);
        assertRan(r[profile], JSON.stringify(r[profile]));
      }
    } finally {
      ws.close();
    }
  });
});
