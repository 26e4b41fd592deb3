// Filesystem helpers shared by the stages: folder creation with clear errors, the one
// atomic file write (the library folder, exported blocks, the repository cache state), and
// whether the sandbox's user can reach a folder (root filesystems, PyPI environments).
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  const tmp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    writeFileSync(tmp, text, { flag: 'wx' });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** The first folder on the way to `dir` (itself included when it exists) that the
 *  sandbox's user cannot pass through, or null. When nnrag runs as root the sandbox runs
 *  as uid 65534, which needs the others' execute bit on every folder above the root
 *  filesystem (a `mktemp -d` folder or /root has none). */
export function unreachableForSandbox(dir: string): string | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const parts = path.resolve(dir).split(path.sep).filter(Boolean);
  let cur: string = path.sep;
  for (const p of ['', ...parts]) {
    cur = p ? path.join(cur, p) : cur;
    let st;
    try {
      st = statSync(cur);
    } catch {
      return null; // does not exist yet: created below with the default mode
    }
    if (st.isDirectory() && (st.mode & 0o001) === 0) return cur;
  }
  return null;
}

/** Find an executable on PATH (or check an explicit path). */
export function which(cmd: string): string | null {
  if (cmd.includes('/')) {
    try {
      accessSync(cmd, constants.X_OK);
      return path.resolve(cmd);
    } catch {
      return null;
    }
  }
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/** Whether `p` is `root` or inside it (both absolute, real paths). */
export function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
