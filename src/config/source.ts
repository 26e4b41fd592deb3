// Classify and vet repository sources before any of them reaches git.
//
// git treats some "URLs" as instructions: `ext::<command>` runs a shell command,
// `fd::<n>` talks over a file descriptor, any `<transport>::<address>` runs the remote
// helper `git-remote-<transport>`, an unknown scheme `foo://` does the same, and an
// argument starting with `-` is parsed as an option (`--upload-pack=<cmd>` runs a
// command; CVE-2017-1000117 smuggled `-oProxyCommand` through an ssh host name).
// We accept only plain https/http/git/ssh/file URLs, scp-like `user@host:path`, and
// local paths, and refuse everything else with a UsageError. The git runner adds
// defence in depth (`-c protocol.ext.allow=never`, `GIT_ALLOW_PROTOCOL`, `--`).
import { statSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../util/errors.js';

export type SourceKind =
  | { kind: 'url'; url: string; scheme: 'https' | 'http' | 'git' | 'ssh' | 'file' }
  | { kind: 'path'; path: string };

const ALLOWED_SCHEMES = new Map<string, 'https' | 'http' | 'git' | 'ssh' | 'file'>([
  ['https', 'https'],
  ['http', 'http'],
  ['git', 'git'],
  ['ssh', 'ssh'],
  ['git+ssh', 'ssh'],
  ['ssh+git', 'ssh'],
  ['file', 'file'],
]);

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const SCP_LIKE = /^(?:([^@/:\s]+)@)?([^@/:\s]+):(?!\/\/)(.*)$/;

/** Throw a UsageError unless `source` is a safe repository source; return its kind.
 *  `what` names the source in messages (e.g. `--repo` or `repo_config.json key "x"`). */
export function vetSource(source: string, what = 'repository source'): SourceKind {
  const refuse = (why: string): never => {
    throw new UsageError(`${what}: refusing ${JSON.stringify(source)}: ${why}`);
  };
  if (source.length === 0) refuse('empty');
  if (CONTROL.test(source)) refuse('contains control characters');
  if (source.startsWith('-')) refuse('starts with "-" and would be read by git as an option');
  const transport = /^([A-Za-z][A-Za-z0-9+.-]*)::/.exec(source);
  if (transport) {
    refuse(
      `"${transport[1]}::" is a git remote-helper transport (it can run commands); use a plain https://, ssh:// or file:// URL`,
    );
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(source);
  if (scheme) {
    if (/\s/.test(source)) refuse('URLs must not contain whitespace');
    const kind = ALLOWED_SCHEMES.get(scheme[1].toLowerCase());
    if (!kind) refuse(`unsupported URL scheme "${scheme[1]}" (allowed: https, http, git, ssh, file)`);
    let u: URL;
    try {
      u = new URL(source);
    } catch {
      return refuse('not a valid URL');
    }
    // git percent-decodes the host and user before handing them to ssh: `%2d` is '-'
    const dec = (s: string) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    };
    if (dec(u.hostname).startsWith('-') || dec(u.username).startsWith('-')) {
      refuse('host or user name starts with "-" (it would reach ssh as an option)');
    }
    if (kind !== 'file' && u.hostname === '') refuse('URL has no host');
    if (kind === 'file' && u.hostname !== '' && u.hostname !== 'localhost') refuse('file:// URLs must be local');
    return { kind: 'url', url: source, scheme: kind! };
  }
  // scp-like syntax `[user@]host:path` is an ssh URL for git when a ':' comes before
  // any '/', unless the string names an existing local path (git's own rule).
  const scp = SCP_LIKE.exec(source);
  if (scp && !existsSync(source)) {
    if (/\s/.test(source)) refuse('URLs must not contain whitespace');
    if (scp[2].startsWith('-') || (scp[1] ?? '').startsWith('-')) refuse('host or user name starts with "-"');
    return { kind: 'url', url: source, scheme: 'ssh' };
  }
  return { kind: 'path', path: source };
}

/** Does this folder look like a bare git repository (HEAD, objects/, refs/, no .git)? */
export function isBareRepo(dir: string): boolean {
  try {
    return (
      statSync(path.join(dir, 'HEAD')).isFile() &&
      statSync(path.join(dir, 'objects')).isDirectory() &&
      statSync(path.join(dir, 'refs')).isDirectory() &&
      !existsSync(path.join(dir, '.git'))
    );
  } catch {
    return false;
  }
}

/** `owner/name` from a URL's path (last two segments, `.git` stripped), or the last one. */
export function nameFromUrl(url: string): string {
  let p: string;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url);
  if (scheme) {
    const u = new URL(url);
    p = u.protocol === 'file:' ? fileURLToPath(u) : decodeURIComponent(u.pathname);
  } else {
    const scp = SCP_LIKE.exec(url);
    p = scp ? scp[3] : url;
  }
  const segs = p
    .replace(/\\/g, '/')
    .split('/')
    .filter((s) => s !== '' && s !== '.');
  const last = segs.length ? segs[segs.length - 1].replace(/\.git$/, '') : '';
  if (!last) throw new UsageError(`cannot derive a repository name from ${JSON.stringify(url)}`);
  if (segs.length >= 2) return `${segs[segs.length - 2]}/${last}`;
  return last;
}
