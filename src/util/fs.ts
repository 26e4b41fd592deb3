// Filesystem helpers shared by the stages: folder creation with clear errors, and the
// one atomic file write (the library folder, exported blocks, the repository cache state).
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/**
 * Write a file atomically: a temporary file in the target's folder (so the rename stays on
 * one file system; created exclusively, `wx`, under a name no other writer uses), then
 * rename(2) over the target, which POSIX makes atomic: readers see the old or the new
 * content, never a part. The temporary file is removed when anything fails. With
 * `createDirs` the folder and its parents are created first.
 */
export function writeFileAtomic(file: string, text: string | Uint8Array, opts: { createDirs?: boolean } = {}): void {
  if (opts.createDirs !== false) ensureDir(path.dirname(file));
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, text, { flag: 'wx' });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
