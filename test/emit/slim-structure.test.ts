// The structure of src/emit/slim (docs/ARCHITECTURE.md "Slim emission"): no function (a
// declaration, a method, an arrow function or a function expression) is longer than 200
// lines, and no module keeps a memo at module level (a top-level `Map`, `WeakMap` or
// `Set` variable): what outlives one block belongs to the analysis object of analysis.ts.
// Read with the TypeScript compiler's own parser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { repoRoot } from '../helpers.js';

const dir = path.join(repoRoot, 'src', 'emit', 'slim');
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

function parse(f: string): ts.SourceFile {
  return ts.createSourceFile(f, readFileSync(path.join(dir, f), 'utf8'), ts.ScriptTarget.Latest, true);
}

test('src/emit/slim: no function longer than 200 lines', () => {
  assert.ok(files.length >= 8, 'the slim files are split by concept');
  const long: string[] = [];
  for (const f of files) {
    const sf = parse(f);
    const visit = (n: ts.Node) => {
      if (ts.isFunctionLike(n) && 'body' in n && n.body) {
        const a = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
        const b = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
        if (b - a + 1 > 200) long.push(`${f}:${a + 1} (${b - a + 1} lines)`);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  assert.deepEqual(long, []);
});

test('src/emit/slim: no memo at module level', () => {
  const memos: string[] = [];
  for (const f of files) {
    const sf = parse(f);
    for (const st of sf.statements) {
      if (!ts.isVariableStatement(st)) continue;
      for (const d of st.declarationList.declarations) {
        const init = d.initializer;
        if (
          init &&
          ts.isNewExpression(init) &&
          ts.isIdentifier(init.expression) &&
          /^(Weak)?(Map|Set)$/.test(init.expression.text)
        ) {
          // a constant set of names (`new Set(['a', 'b'])`) is no memo
          if (init.arguments?.length && ts.isArrayLiteralExpression(init.arguments[0])) continue;
          memos.push(`${f}: ${d.name.getText(sf)}`);
        }
      }
    }
  }
  assert.deepEqual(memos, []);
});
