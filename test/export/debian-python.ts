// The interpreter the export tests validate and run usage lines with: Debian's
// /usr/bin/python3 and its torch (the older target), in the real sandbox. Where either is
// missing the tests that need them skip, saying which.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { needsTorch } from '../support/tier.js';

export const PY = '/usr/bin/python3';

/** Whether PY imports torch and `modules` (e.g. `venv`). */
export function debianTorch(modules: string[] = []): boolean {
  if (needsTorch() || !existsSync(PY)) return false;
  try {
    execFileSync(PY, ['-c', `import ${['torch', ...modules].join(', ')}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The reason the sandboxed export tests cannot run here, or false. */
export function skipWithout(haveTorch: boolean): string | false {
  return (!haveTorch && 'no /usr/bin/python3 with torch') || (!existsSync('/usr/bin/bwrap') && 'no bubblewrap');
}
