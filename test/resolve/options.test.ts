// intern/extern overrides (torch.package style) and the TypeScript API's records.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { repoRoot, tempDir } from '../helpers.js';

describe('intern / extern patterns', () => {
  let ws: api.Workspace;
  before(async () => {
    ws = api.Workspace.open(tempDir());
    await api.index(ws, {
      repos: [
        {
          name: 'examples',
          url: null,
          path: path.join(repoRoot, 'examples'),
          priority: 1,
          paths: [],
          description: null,
          packageRoots: null,
        },
      ],
    });
  });
  after(() => ws.close());

  it('copies the base class from the second package by default', () => {
    const { text, record } = api.extractText(ws, 'tinyvision.models.resnet.Bottleneck');
    assert.ok(record.ok);
    assert.match(text, /^class BaseModule\(nn\.Module\):/m);
    assert.ok(record.interned.includes('tinybase.module'));
    assert.ok(!record.externs.includes('tinybase'));
  });

  it('--extern keeps a matching package as an import and records it as a requirement', () => {
    const { text, record } = api.extractText(ws, 'tinyvision.models.resnet.Bottleneck', { extern: ['tinybase'] });
    assert.ok(record.ok);
    assert.doesNotMatch(text, /^class BaseModule/m);
    assert.match(text, /^from tinybase(\.module)? import BaseModule$/m);
    assert.ok(record.externs.includes('tinybase'));
    assert.ok(!record.interned.some((m) => m.startsWith('tinybase')));
  });

  it('--intern interns only matching modules', () => {
    const { text, record } = api.extractText(ws, 'tinyvision.models.resnet.Bottleneck', {
      intern: ['tinyvision.models.*'],
    });
    assert.ok(record.ok, JSON.stringify(record.diagnostics));
    assert.match(text, /^class Bottleneck\(BaseModule\):/m);
    assert.doesNotMatch(text, /^class ConvBnAct/m);
    assert.ok(
      record.interned.every((m) => m.startsWith('tinyvision.models')),
      record.interned.join(),
    );
  });
});
