// Differential test of the binder against CPython's own scope analysis (the `symtable`
// module, run by test/fixtures/scopes/symtable_oracle.py): for every top-level
// statement, the module-scope names read (with eager/lazy) and the names bound must be
// the same, apart from the documented differences the oracle lists (class-body
// LOAD_NAME reads, `x += 1` / `del x`, annotation-only names). Inputs: a hand-written
// fixture of scope rules, seeded random programs, and the timm checkout if present.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { initParser } from '../../src/parse/parser.js';
import { bindSource } from '../../src/parse/binder.js';
import { fixture, tempDir, TIMM_CHECKOUT } from '../helpers.js';

const PYTHON = '/usr/bin/python3';
const ORACLE = fixture('scopes', 'symtable_oracle.py');

interface OracleStatement {
  line: number;
  reads: [string, boolean][];
  binds: string[];
  allow_extra_reads: string[];
  allow_missing_binds: string[];
}

function oracle(...paths: string[]): Record<string, OracleStatement[]> {
  const out = execFileSync(PYTHON, [ORACLE, ...paths], { encoding: 'utf8', maxBuffer: 1 << 28 });
  return JSON.parse(out) as Record<string, OracleStatement[]>;
}

/** Compare every statement; returns the number compared and the mismatches found. */
function compare(facts: Record<string, OracleStatement[]>): { statements: number; mismatches: string[] } {
  let statements = 0;
  const mismatches: string[] = [];
  for (const [file, expected] of Object.entries(facts)) {
    const f = bindSource(readFileSync(file, 'utf8'));
    const byLine = new Map(f.statements.map((s) => [s.startLine, s]));
    for (const o of expected) {
      statements++;
      const st = byLine.get(o.line);
      if (!st) {
        mismatches.push(`${file}:${o.line}: no statement`);
        continue;
      }
      const key = (name: string, eager: boolean) => `${name}${eager ? '' : '~'}`;
      const reads = new Set(st.refs.filter((r) => !r.soft).map((r) => key(r.name, r.eager)));
      const want = new Set(o.reads.map(([n, e]) => key(n, e)));
      const missing = [...want].filter((r) => !reads.has(r));
      const extra = [...reads].filter((r) => !want.has(r) && !o.allow_extra_reads.includes(r.replace(/~$/, '')));
      const missingBinds = o.binds.filter((b) => !st.binds.includes(b) && !o.allow_missing_binds.includes(b));
      const extraBinds = st.binds.filter((b) => !o.binds.includes(b));
      if (missing.length + extra.length + missingBinds.length + extraBinds.length) {
        mismatches.push(`${file}:${o.line}: ${JSON.stringify({ missing, extra, missingBinds, extraBinds })}`);
      }
    }
  }
  return { statements, mismatches };
}

const hasPython = existsSync(PYTHON);

test('scope-rule fixture: the binder agrees with symtable', {
  skip: !hasPython && `${PYTHON} is missing`,
}, async () => {
  await initParser();
  const { statements, mismatches } = compare(oracle(fixture('scopes', 'tricky.py')));
  assert.ok(statements >= 35, `fixture statements compared: ${statements}`);
  assert.deepEqual(mismatches, []);
});

test('random programs: the binder agrees with symtable', { skip: !hasPython && `${PYTHON} is missing` }, async () => {
  await initParser();
  const dir = tempDir('nnrag-scopes-');
  const written = Number(
    execFileSync(PYTHON, [fixture('scopes', 'gen_programs.py'), '7', dir, '1500'], { encoding: 'utf8' }).trim(),
  );
  assert.ok(written > 300, `programs generated: ${written}`);
  const { statements, mismatches } = compare(oracle(dir));
  assert.ok(statements > 500, `statements compared: ${statements}`);
  assert.deepEqual(mismatches.slice(0, 10), []);
});

test('timm: the binder agrees with symtable on every top-level statement', async (t) => {
  const root = path.join(TIMM_CHECKOUT || '/nonexistent', 'timm');
  if (!hasPython || !existsSync(root)) {
    t.skip(`${root} or ${PYTHON} does not exist`);
    return;
  }
  await initParser();
  const { statements, mismatches } = compare(oracle(root));
  assert.ok(statements > 3000, `statements compared: ${statements}`);
  assert.deepEqual(mismatches.slice(0, 10), []);
});
