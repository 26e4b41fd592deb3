// Test helpers: build real git repositories in temporary folders (a bare "remote" with
// commits pushed to it, reachable through file:// URLs), using the real git CLI.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../helpers.js';

export function sh(cwd: string, ...args: string[]): string {
  return execFileSync(
    'git',
    ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args],
    {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
    },
  ).trim();
}

export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, ...rel.split('/'));
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}

export interface Remote {
  /** bare repository folder */
  bare: string;
  url: string;
  /** work tree that pushes to the bare repository */
  work: string;
  /** commit files and push; returns the new commit sha */
  commit(files: Record<string, string | Buffer>, message?: string): string;
}

/** A bare repository (allowing partial-clone filters, as GitHub does) plus a work tree. */
export function makeRemote(files: Record<string, string | Buffer>, name = 'remote.git'): Remote {
  const base = tempDir('nnrag-git-');
  const bare = path.join(base, name);
  sh(base, 'init', '--quiet', '--bare', bare);
  sh(bare, 'config', 'uploadpack.allowFilter', 'true');
  const work = path.join(base, 'work');
  sh(base, 'init', '--quiet', work);
  const remote: Remote = {
    bare,
    url: pathToFileURL(bare).href,
    work,
    commit(f, message = 'change') {
      writeFiles(work, f);
      sh(work, 'add', '-A');
      sh(work, 'commit', '--quiet', '-m', message);
      sh(work, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      return sh(work, 'rev-parse', 'HEAD');
    },
  };
  remote.commit(files, 'initial');
  return remote;
}
