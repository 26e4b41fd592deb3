// Test support: run emitted modules in the real validation Python (Debian's
// /usr/bin/python3 with torch, or NNRAG_PYTHON) through test/support/run_modules.py. In
// the fast tier (no torch) only pyflakes runs: `assertRan` then asserts that the module
// was not run, and the whole suite runs it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, tempDir } from '../helpers.js';
import { FAST } from './tier.js';

export const PYTHON = process.env.NNRAG_PYTHON ?? '/usr/bin/python3';

export interface ModuleCheck {
  undefined: string[];
  syntax: string[];
  result: string;
}

/** What run_modules.py gives as the result of a module it did not run (--no-run). */
export const NOT_RUN = 'not run (fast tier: no torch)';

/** The module imported and its `run` snippet passed; in the fast tier, it was not run. */
export function assertRan(c: ModuleCheck, message?: string): void {
  if (FAST) assert.equal(c.result, NOT_RUN);
  else assert.equal(c.result, 'ok', message ?? c.result);
}

/** pyflakes undefined names + import + `run` snippet for each module, in one Python
 *  (pyflakes only in the fast tier). */
export function checkModules(cases: { name: string; file: string; run?: string }[]): Record<string, ModuleCheck> {
  const dir = tempDir('nnrag-pycheck-');
  const input = path.join(dir, 'cases.json');
  const output = path.join(dir, 'results.json');
  writeFileSync(input, JSON.stringify(cases));
  execFileSync(
    PYTHON,
    [path.join(repoRoot, 'test', 'support', 'run_modules.py'), input, output, ...(FAST ? ['--no-run'] : [])],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: dir,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    },
  );
  return JSON.parse(readFileSync(output, 'utf8')) as Record<string, ModuleCheck>;
}
