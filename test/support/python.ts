// Test support: run emitted modules in the real validation Python (Debian's
// /usr/bin/python3 with torch, or NNRAG_PYTHON) through test/support/run_modules.py.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, tempDir } from '../helpers.js';

export const PYTHON = process.env.NNRAG_PYTHON ?? '/usr/bin/python3';

export interface ModuleCheck {
  undefined: string[];
  syntax: string[];
  result: string;
}

/** pyflakes undefined names + import + `run` snippet for each module, in one Python. */
export function checkModules(cases: { name: string; file: string; run?: string }[]): Record<string, ModuleCheck> {
  const dir = tempDir('nnrag-pycheck-');
  const input = path.join(dir, 'cases.json');
  const output = path.join(dir, 'results.json');
  writeFileSync(input, JSON.stringify(cases));
  execFileSync(PYTHON, [path.join(repoRoot, 'test', 'support', 'run_modules.py'), input, output], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: dir,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  return JSON.parse(readFileSync(output, 'utf8')) as Record<string, ModuleCheck>;
}
