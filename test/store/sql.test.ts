// Nothing outside src/store/ talks to the database: no SQL statement, no raw handle, no
// migration registered by a module at load time (the schema is the one static list in
// src/store/migrations.ts, applied on every open).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers.js';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

// a prepared statement, a raw `exec` of SQL text, the database handle, a pragma
const SQL_USE = [/\.(?:stmt|prepare)\(\s*['"`]/, /\.exec\(\s*['"`]/, /\.db\.\w/, /\.pragma\(/, /registerMigration/];

test('no SQL and no migration registration outside src/store/', () => {
  const src = path.join(repoRoot, 'src');
  const leaks: string[] = [];
  for (const f of sources(src)) {
    const rel = path.relative(repoRoot, f).split(path.sep).join('/');
    if (rel.startsWith('src/store/')) continue;
    readFileSync(f, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (SQL_USE.some((re) => re.test(line))) leaks.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(leaks, []);
});

test('the check finds a statement written outside the store', () => {
  assert.ok(SQL_USE.some((re) => re.test("store.stmt('SELECT 1 FROM blocks').get()")));
  assert.ok(SQL_USE.some((re) => re.test('ws.store.db.exec(x)')));
});
