// Shared helpers for the validator tests: fixture loading and whether this machine can
// run real validations (a Python with torch; bubblewrap for the sandboxed ones).
// Nothing here mocks torch or the sandbox: tests that cannot run real checks skip (but
// a harness that cannot find the torch that is installed fails them).
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fixture } from '../helpers.js';
import { needsSandbox, needsTorch } from '../support/tier.js';
import { findPython } from '../../src/validate/index.js';
import { which } from '../../src/validate/environment.js';
import type { ValidationRequest } from '../../src/validate/index.js';

export function validateFixture(...parts: string[]): string {
  return readFileSync(fixture('validate', ...parts), 'utf8');
}

export function listFixtures(dir: string): string[] {
  return readdirSync(fixture('validate', dir))
    .filter((f) => f.endsWith('.py'))
    .sort();
}

/** The last top-level class of a fixture module (the block under test). */
export function mainClass(src: string): string {
  const all = [...src.matchAll(/^class (\w+)/gm)];
  return all.length ? all[all.length - 1][1] : 'Missing';
}

export function request(dir: string, file: string, extra: Partial<ValidationRequest> = {}): ValidationRequest {
  const source = validateFixture(dir, file);
  return { id: `${dir}/${file}`, source, className: mainClass(source), ...extra };
}

let pythonCache: Promise<{ python: string; torch: string } | null> | null = null;
/** The Python with torch the validator finds, or null where none is installed. Where
 *  torch is installed but the harness's probe finds no interpreter with it, the harness
 *  itself is broken: that rejects (the tests fail), it never makes them skip. */
export function torchPython() {
  if (needsTorch()) return Promise.resolve(null);
  pythonCache ??= findPython().then((found) => {
    if (found) return found;
    for (const py of ['python3', '/usr/bin/python3']) {
      if (spawnSync(py, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 }).status === 0) {
        throw new Error(
          `${py} imports torch but the harness's probe finds no Python with torch: the harness is broken (see nnrag doctor)`,
        );
      }
    }
    return null;
  });
  return pythonCache;
}

/** Reason to skip, or null when real sandboxed validation can run here. */
export async function cannotValidate(needSandbox = true): Promise<string | null> {
  const tier = needsTorch() || (needSandbox && needsSandbox());
  if (tier) return tier;
  if (!(await torchPython())) return 'no Python with torch on this machine';
  if (needSandbox && !which('bwrap')) return 'bubblewrap (bwrap) is not installed';
  return null;
}

/** Reason to skip, or null when the repository's tests can be run as a witness source
 *  here: real sandboxed validation and an interpreter with both torch and pytest. */
export async function cannotRunTests(): Promise<string | null> {
  const why = await cannotValidate(true);
  if (why) return why;
  const py = (await torchPython())!.python;
  if (spawnSync(py, ['-c', 'import pytest'], { stdio: 'ignore', timeout: 60_000 }).status !== 0) {
    return `${py} has torch but not pytest: set NNRAG_PYTHON to an interpreter with both (scripts/setup.sh's PyPI environment)`;
  }
  return null;
}

/** Live descendants of a host process with their depth below it (from /proc). */
export function processTree(root: number): { pid: number; depth: number }[] {
  const kids = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z') continue;
      const ppid = Number(rest[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid)!.push(Number(name));
    } catch {
      /* exited */
    }
  }
  const out: { pid: number; depth: number }[] = [];
  const stack = [{ pid: root, depth: 0 }];
  while (stack.length) {
    const p = stack.pop()!;
    for (const c of kids.get(p.pid) ?? []) {
      out.push({ pid: c, depth: p.depth + 1 });
      stack.push({ pid: c, depth: p.depth + 1 });
    }
  }
  return out;
}
