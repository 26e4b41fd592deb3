// One case per rule of slim's value analysis (src/emit/slim/values.ts and the files it
// names; fixtures test/fixtures/slim-values, README there): each case's slim module drops
// the definitions only a branch its values never take reads (the faithful module has
// them), keeps what they reach, and still builds and runs with torch (where there is one).
// Real tree-sitter, real SQLite, real torch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { entryCallFromText } from '../../src/emit/slim/entry.js';
import { fixture, tempDir } from '../helpers.js';
import { torchPython } from '../validate/common.js';

interface Expect {
  target: string;
  rule: string;
  gone: string[];
  kept: string[];
  entry?: string;
}

const root = fixture('slim-values');
const cases = readdirSync(root).filter((d) => !d.includes('.'));

/** The lines of a module after its header (comments at the top). */
const body = (text: string) => text.split('\n').filter((l) => !l.startsWith('#'));

test('every value rule has a case', () => {
  assert.ok(cases.length >= 18, cases.join(', '));
});

for (const name of cases) {
  test(`slim value rule ${name}`, async () => {
    const dir = path.join(root, name);
    const exp = JSON.parse(readFileSync(path.join(dir, 'expect.json'), 'utf8')) as Expect;
    const ws = api.Workspace.open(path.join(tempDir(), 'store'), { create: true });
    try {
      await api.index(ws, {
        repos: [
          {
            name: `case/${name}`,
            url: null,
            path: dir,
            priority: 1,
            paths: ['pkg'],
            description: null,
            packageRoots: null,
          },
        ],
      });
      api.discover(ws);
      const entry = exp.entry ? [entryCallFromText(exp.entry)!] : undefined;
      const slim = api.extractText(ws, exp.target, { profile: 'slim' }, entry ? { entry } : {});
      const faithful = api.extractText(ws, exp.target, { profile: 'faithful' });
      assert.ok(slim.text && faithful.text, slim.record.error ?? faithful.record.error);
      for (const s of exp.gone) {
        assert.ok(faithful.text.includes(s), `${exp.rule}: the faithful module has ${s}`);
        assert.ok(!body(slim.text).some((l) => l.includes(s)), `${exp.rule}: slim still has ${s}\n${slim.text}`);
      }
      for (const s of exp.kept)
        assert.ok(
          body(slim.text).some((l) => l.includes(s)),
          `${exp.rule}: slim lost ${s}\n${slim.text}`,
        );
      assert.match(slim.text, /nnrag slim: /, 'the pruned code is marked');
      const py = await torchPython();
      if (py) {
        const run = tempDir();
        writeFileSync(path.join(run, 'slim_block.py'), slim.text);
        const cls = exp.target.split('.').pop();
        const args = exp.entry ?? '()';
        const dim = Number(/\d+/.exec(args)?.[0] ?? 4);
        const out = execFileSync(
          py.python,
          [
            '-c',
            `import torch, slim_block\nb = slim_block.${cls}${args}\nprint(tuple(b(torch.zeros(1, ${dim})).shape))`,
          ],
          { cwd: run, encoding: 'utf8' },
        );
        assert.equal(out.trim(), `(1, ${dim})`);
      }
    } finally {
      ws.close();
    }
  });
}
