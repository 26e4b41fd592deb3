// The corpus side of constructor inference: calls of a block found in the index
// (literal argument lists, else the call in the text of its enclosing statement with
// the offset of its `(`), and the configuration tables of the block's module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../../src/nnrag.js';
import { callSites, dataSites } from '../../src/pipeline/pipeline.js';
import { fixture, tempDir } from '../helpers.js';

test('call sites: literal ones first, then calls in context; data sites: configuration tables only', async () => {
  const ws = api.Workspace.open(tempDir());
  try {
    await api.index(ws, {
      repos: [
        {
          name: 'sites',
          url: null,
          path: fixture('sites'),
          priority: 1,
          paths: [],
          description: null,
          packageRoots: null,
        },
      ],
    });
    const sites = callSites(ws, 'netpkg.layers.Conv');
    assert.equal(sites[0], '(3, 8)');
    const ctx = sites.filter((s) => typeof s !== 'string') as { module: string; text: string; offset: number }[];
    assert.equal(ctx.length, 1, JSON.stringify(sites)); // Conv(width, 16, padding=conv.keywords[...]) is not literal
    assert.equal(ctx[0].module, 'netpkg.layers');
    assert.match(ctx[0].text, /^class Net\(nn\.Module\):/);
    assert.equal(ctx[0].text[ctx[0].offset], '(');
    assert.ok(ctx[0].text.slice(0, ctx[0].offset).endsWith('self.head = Conv'));
    // the partial's own call `conv(8, width)` does not name the class: not a call site
    assert.equal(sites.length, 2);

    const data = dataSites(ws, 'netpkg.layers.Conv');
    assert.deepEqual(
      data.map((d) => d.name),
      ['model_cfgs'],
    );
    assert.match(data[0].text, /^model_cfgs = dict\(small=/);
    assert.deepEqual(dataSites(ws, 'netpkg.nowhere.Conv'), []);
  } finally {
    ws.close();
  }
});
