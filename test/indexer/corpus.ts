// Helpers for the index tests: small synthetic Python trees written to temp folders,
// a checkout description for them, and a plain listing that does not check what it
// lists (to feed the indexer files that fail when read).
import { mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ListedFile, IndexCheckout, Lister } from '../../src/indexer/indexer.js';

/** Write `files` (relative path → text or bytes) under `root`. */
export function writeTree(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, text] of Object.entries(files)) {
    const abs = path.join(root, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, text);
  }
}

/** Set every file's mtime to `secondsAgo` in the past, so the stat cache trusts it
 *  (files younger than 2 s are "racily clean" and always re-read). */
export function ageTree(root: string, secondsAgo = 3600): void {
  const t = Date.now() / 1000 - secondsAgo;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else utimesSync(p, t, t);
    }
  };
  walk(root);
}

/** Recursive *.py listing (sorted), like src/repos' listPythonFiles. */
export const listTree: Lister = (root, opts) => {
  const files: ListedFile[] = [];
  const problems: { path: string; message: string }[] = [];
  const walk = (rel: string) => {
    const dir = path.join(root, rel);
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.name.endsWith('.py')) {
        try {
          const s = statSync(path.join(root, r));
          files.push({ path: r, size: s.size, mtimeMs: s.mtimeMs });
        } catch (err) {
          problems.push({ path: r, message: (err as Error).message });
        }
      }
    }
  };
  for (const p of opts.paths ?? ['']) walk(p.replace(/\/+$/, ''));
  files.sort((a, b) => (a.path < b.path ? -1 : 1));
  return { files, problems };
};

export function checkout(name: string, root: string): IndexCheckout {
  return { name, root, revision: null, originUrl: null, local: true, packageRoots: [''] };
}

/** Deterministic Python module text of roughly `lines` lines, unique per `seed`. */
export function pyModule(seed: number, lines = 60): string {
  const out = [
    `"""Synthetic module ${seed}."""`,
    'import math',
    'from typing import Optional',
    'import torch',
    'from torch import nn',
    '',
  ];
  let k = 0;
  while (out.length < lines) {
    out.push(
      `def helper_${seed}_${k}(x, scale: float = 1.0):`,
      `    y = [v * scale for v in range(${k + 1})]`,
      `    return math.sqrt(sum(y)) + x`,
      '',
      `class Block${seed}_${k}(nn.Module):`,
      `    def __init__(self, dim: int = ${16 + k}, act: Optional[nn.Module] = None):`,
      '        super().__init__()',
      '        self.fc = nn.Linear(dim, dim)',
      '        self.act = act or nn.ReLU()',
      '',
      '    def forward(self, x):',
      `        return self.act(self.fc(x)) * helper_${seed}_${k}(1.0)`,
      '',
    );
    k++;
  }
  return out.join('\n') + '\n';
}

/** A package of `n` synthetic modules: pkg/__init__.py + pkg/m<i>.py. */
export function pyPackage(n: number, lines = 60, seedBase = 0): Record<string, string> {
  const files: Record<string, string> = { 'pkg/__init__.py': 'from .m0 import *\n' };
  for (let i = 0; i < n; i++) files[`pkg/m${i}.py`] = pyModule(seedBase + i, lines);
  return files;
}
