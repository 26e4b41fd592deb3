// Debian's package index as apt sees it: `apt-cache policy` read once, here, for every
// caller (the environment gaps `doctor` lists, what a `missing-extern` failure lacks, a
// root filesystem's sync). apt-cache prints, per package, a `name:` line followed by
// indented `Installed:` and `Candidate:` lines; `(none)` means no such version.
import { execFile } from 'node:child_process';

/** Each package's candidate version from `apt-cache policy` output, null when apt has
 *  none (`Candidate: (none)`, or the package is not in its lists at all). */
export function parseAptPolicy(stdout: string, pkgs: readonly string[]): Map<string, string | null> {
  const out = new Map<string, string | null>(pkgs.map((p) => [p, null]));
  let cur: string | null = null;
  for (const line of stdout.split('\n')) {
    const head = /^(\S+):$/.exec(line);
    if (head) cur = head[1];
    const cand = /^\s+Candidate:\s*(\S+)/.exec(line);
    if (cur && cand && out.has(cur)) out.set(cur, cand[1] === '(none)' ? null : cand[1]);
  }
  return out;
}

/** Debian's candidate version of each package: the host's apt, or (`rootfs`, as root
 *  only: it chroots) the root filesystem's. Null when apt could not be asked at all (no
 *  apt-cache, not root for a root filesystem); a package apt knows nothing of is null in
 *  the map (run `apt-get update` once). */
export function aptCandidates(
  pkgs: readonly string[],
  rootfs: string | null = null,
): Promise<Map<string, string | null> | null> {
  if (!pkgs.length) return Promise.resolve(new Map());
  if (rootfs && process.getuid?.() !== 0) return Promise.resolve(null);
  const cmd = rootfs ? 'chroot' : 'apt-cache';
  const args = rootfs ? [rootfs, 'apt-cache', 'policy', ...pkgs] : ['policy', ...pkgs];
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { timeout: 60_000, maxBuffer: 16 << 20, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } },
      (err, stdout) => {
        if (err && !stdout) return resolve(null);
        resolve(parseAptPolicy(String(stdout), pkgs));
      },
    );
  });
}
