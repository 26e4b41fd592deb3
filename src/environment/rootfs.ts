// `nnrag env create DIR`: build a root filesystem for validation with debootstrap
// (Debian trixie + python3-torch, i.e. torch 2.6), so that blocks needing torch 2 APIs
// can be validated with `--rootfs DIR` while the host keeps its own torch.
//
// Needs: root (debootstrap creates device nodes and chroots), the debootstrap package,
// and network access to a Debian mirror; it downloads a few hundred MB and takes
// minutes. The mirror is `opts.mirror`, else debootstrap's own default. The result is
// then checked by running `import torch` inside it through bwrap.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { NnragError } from '../util/errors.js';

export interface CreateRootfsOptions {
  /** Debian suite, default 'trixie' (python3-torch 2.6) */
  suite?: string;
  /** Debian mirror URL; default: debootstrap's own */
  mirror?: string;
  /** extra Debian packages to include (e.g. 'python3-numpy', 'python3-einops') */
  packages?: string[];
  /** architecture, default: the host's */
  arch?: string;
  /** progress lines from debootstrap */
  onLog?: (line: string) => void;
  /** allow a non-empty DIR */
  force?: boolean;
  /** the packages every environment gets, default python3 + torch + torchvision + Pillow;
   *  a smaller set (tests) skips the torch check */
  base?: string[];
  /** debootstrap's package cache (--cache-dir), reused between runs */
  cacheDir?: string;
  /** checks the finished root filesystem by running its Python in the sandbox (the
   *  validator's probe, passed in by the caller: the sandbox lives above this layer);
   *  null when it could not run (no bubblewrap) */
  check?: (rootfs: string) => Promise<RootfsCheck | null>;
}

/** What the check of a finished root filesystem found: its Python's version and torch's,
 *  or why it did not run. */
export interface RootfsCheck {
  python: string | null;
  torch: string | null;
  error?: string;
}

export const BASE_PACKAGES = ['python3', 'python3-torch', 'python3-torchvision', 'python3-pil'];

import { unreachableForSandbox, which } from '../util/fs.js';

export async function createRootfs(dir: string, opts: CreateRootfsOptions = {}): Promise<void> {
  const target = path.resolve(dir);
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new NnragError('nnrag env create needs root (debootstrap); run it with sudo');
  }
  // checked before minutes of debootstrap, not after
  const blocked = unreachableForSandbox(target);
  if (blocked) {
    throw new NnragError(
      `${blocked} cannot be entered by the sandbox's user (uid 65534), so a root filesystem under it would be unusable; ` +
        `choose a folder such as /var/lib/nnrag/env, or allow it with \`chmod o+x ${blocked}\``,
    );
  }
  const debootstrap = which('debootstrap');
  if (!debootstrap) throw new NnragError('debootstrap is not installed (apt-get install debootstrap)');
  if (existsSync(target) && readdirSync(target).length > 0 && !opts.force) {
    throw new NnragError(`${target} is not empty`);
  }
  mkdirSync(target, { recursive: true });
  // torchvision and Pillow too: repositories such as timm import them at package import,
  // so without them the originals do not import and equivalence cannot run
  const base = opts.base ?? BASE_PACKAGES;
  const packages = [...base, ...(opts.packages ?? [])];
  const args = ['--variant=minbase', `--include=${packages.join(',')}`];
  if (opts.cacheDir) {
    mkdirSync(opts.cacheDir, { recursive: true });
    args.push(`--cache-dir=${path.resolve(opts.cacheDir)}`);
  }
  if (opts.arch) args.push(`--arch=${opts.arch}`);
  args.push(opts.suite ?? 'trixie', target);
  if (opts.mirror) args.push(opts.mirror);
  await new Promise<void>((resolve, reject) => {
    const p = spawn(debootstrap, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const onChunk = (d: Buffer) => {
      const s = d.toString();
      tail = (tail + s).slice(-4000);
      for (const line of s.split('\n')) if (line.trim()) opts.onLog?.(line);
    };
    p.stdout.on('data', onChunk);
    p.stderr.on('data', onChunk);
    p.on('error', (e) => reject(new NnragError(`debootstrap failed to start: ${e.message}`)));
    p.on('close', (code) =>
      code === 0 ? resolve() : reject(new NnragError(`debootstrap exited with ${code}: ${tail.trim().slice(-1500)}`)),
    );
  });
  // downloaded packages are not needed any more
  rmSync(path.join(target, 'var/cache/apt/archives'), { recursive: true, force: true });
  mkdirSync(path.join(target, 'var/cache/apt/archives/partial'), { recursive: true });
  const found = opts.check ? await opts.check(target) : null;
  if (!found) {
    opts.onLog?.('no sandbox to check it with: root filesystem built but not checked');
    return;
  }
  const wantTorch = base.includes('python3-torch');
  if (!found.python || (wantTorch && !found.torch)) {
    throw new NnragError(`root filesystem built in ${target}, but torch does not import in it: ${found.error}`);
  }
  opts.onLog?.(`root filesystem ready: python ${found.python}${wantTorch ? `, torch ${found.torch}` : ''}`);
}
