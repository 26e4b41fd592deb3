// Filesystem helpers shared by the stages.
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { NnragError } from './errors.js';

/**
 * Create folder `dir` and its missing parents, one level at a time. Unlike
 * mkdirSync(…, { recursive: true }), which loops forever where mkdir keeps failing with
 * ENOENT under an existing parent (/proc, /sys), every failure is a clear error.
 */
export function ensureDir(dir: string, what = 'folder'): void {
  const abs = path.resolve(dir);
  const missing: string[] = [];
  let d = abs;
  for (;;) {
    let st;
    try {
      st = statSync(d);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw new NnragError(`cannot create ${what} ${abs}: ${d}: ${(e as Error).message}`, 'fs');
      missing.push(d);
      if (d === path.dirname(d)) break;
      d = path.dirname(d);
      continue;
    }
    if (!st.isDirectory()) throw new NnragError(`cannot create ${what} ${abs}: ${d} is not a folder`, 'fs');
    break;
  }
  for (const m of missing.reverse()) {
    try {
      mkdirSync(m);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new NnragError(`cannot create ${what} ${abs}: ${(e as Error).message}`, 'fs');
    }
  }
}
