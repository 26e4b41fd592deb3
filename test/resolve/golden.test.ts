// Golden resolver/emitter tests: every case under test/fixtures/resolve (one Python rule
// each, see its README) is indexed, its target extracted, and the emitted module checked
// against expect.json, by pyflakes, and by running it in Python with torch.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { assertRan, checkModules, type ModuleCheck } from '../support/python.js';
import { ParsePool } from '../../src/indexer/pool.js';

interface Expect {
  target: string;
  mustContain: string[];
  mustNotContain: string[];
  order?: string[];
  externs: string[];
  diagnostics: { name: string; reason: string }[];
  run?: string;
}

const root = fixture('resolve');
const cases = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

interface Outcome {
  expect: Expect;
  text: string;
  record: api.BlockRecord;
  file: string;
}

const outcomes = new Map<string, Outcome>();
let checks: Record<string, ModuleCheck> = {};

describe('resolver golden cases', () => {
  before(async () => {
    const out = tempDir('nnrag-golden-');
    // one parse worker for every case (a pool per index run would start tree-sitter ~50 times)
    const pool = new ParsePool(1);
    for (const name of cases) {
      const dir = path.join(root, name);
      const expect = JSON.parse(readFileSync(path.join(dir, 'expect.json'), 'utf8')) as Expect;
      const ws = api.Workspace.open(path.join(out, name, 'store'));
      try {
        await api.index(ws, {
          repos: [{ name, url: null, path: dir, priority: 1, paths: [], description: null, packageRoots: [''] }],
          workers: 1,
          pool,
        });
        const { record, text } = api.extractText(ws, expect.target);
        const file = path.join(out, name, 'emitted.py');
        writeFileSync(file, text);
        outcomes.set(name, { expect, text, record, file });
      } finally {
        ws.close();
      }
    }
    await pool.close();
    checks = checkModules([...outcomes].map(([name, o]) => ({ name, file: o.file, run: o.expect.run })));
  });

  for (const name of cases) {
    it(name, () => {
      const o = outcomes.get(name)!;
      assert.ok(o.text, `nothing emitted: ${o.record.error}`);
      for (const s of o.expect.mustContain)
        assert.ok(o.text.includes(s), `missing ${JSON.stringify(s)}\n---\n${o.text}`);
      for (const s of o.expect.mustNotContain)
        assert.ok(!o.text.includes(s), `must not contain ${JSON.stringify(s)}\n---\n${o.text}`);
      let pos = -1;
      for (const s of o.expect.order ?? []) {
        const i = o.text.indexOf(s, pos + 1);
        assert.ok(i > pos, `order: ${JSON.stringify(s)} should come later\n---\n${o.text}`);
        pos = i;
      }
      const importLines = o.text.split('\n').filter((l) => /^(import|from) \S/.test(l));
      const tops = new Set(importLines.map((l) => l.split(/\s+/)[1].split('.')[0]));
      // optional imports inside kept try statements count too
      for (const m of o.text.matchAll(/^\s+(?:import|from) ([A-Za-z_][\w]*)/gm)) tops.add(m[1]);
      // an unresolvable import of the case's own package is kept on purpose (missing-module)
      const interned = new Set(
        readdirSync(path.join(root, name), { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => d.name),
      );
      for (const t of [...tops]) if (interned.has(t)) tops.delete(t);
      assert.deepEqual([...tops].sort(), [...o.expect.externs].sort(), `externs\n---\n${o.text}`);
      const diags = o.record.diagnostics.map((d) => `${d.name}:${d.reason}`).sort();
      assert.deepEqual(diags, o.expect.diagnostics.map((d) => `${d.name}:${d.reason}`).sort());
      const c = checks[name];
      assert.deepEqual(c.syntax, [], 'emitted module parses');
      // pyflakes finds no undefined name, except those the extraction itself diagnosed
      const diagnosed = new Set(o.record.diagnostics.map((d) => d.name));
      const undefinedNames = c.undefined.filter((u) => !diagnosed.has(/undefined name '([^']+)'/.exec(u)?.[1] ?? ''));
      assert.deepEqual(undefinedNames, [], 'pyflakes finds no undefined name');
      assertRan(c, `running the emitted module:\n${c.result}\n---\n${o.text}`);
    });
  }
});
