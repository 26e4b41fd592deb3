// Software Heritage identifiers (SWHID, https://docs.softwareheritage.org/devel/swh-model/persistent-identifiers.html)
// for the provenance of library blocks. A content SWHID is `swh:1:cnt:` + the git blob id
// of the file's bytes, i.e. sha1("blob " + <byte length> + "\0" + bytes), exactly what
// `git hash-object <file>` prints (without filters: the bytes as stored, no CRLF conversion).
// A revision SWHID is `swh:1:rev:` + the git commit id. Origins are not hashed: SWHID
// qualifiers carry the origin URL as `;origin=<url>`.
import { gitBlobId } from '../repos/git.js';

const HEX40 = /^[0-9a-f]{40}$/;

export { gitBlobId };

/** `swh:1:cnt:<git blob id>` of a file's bytes. */
export function contentSwhid(bytes: Buffer | Uint8Array | string): string {
  return `swh:1:cnt:${gitBlobId(bytes)}`;
}

/** `swh:1:rev:<commit>` for a full 40-hex git commit id (case-normalised). */
export function revisionSwhid(commit: string): string {
  const c = commit.trim().toLowerCase();
  if (!HEX40.test(c)) throw new Error(`not a full git commit id: ${JSON.stringify(commit)}`);
  return `swh:1:rev:${c}`;
}

/** An origin is identified by its URL; normalise trailing slashes and `.git`. */
export function originUrl(url: string): string {
  return url
    .trim()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

/** A qualified SWHID: core id plus `;origin=` and `;anchor=` (revision) and `;path=`,
 *  `;lines=` qualifiers in the order the SWHID spec lists them. */
export function qualifiedSwhid(
  core: string,
  q: { origin?: string; anchor?: string; path?: string; lines?: [number, number] },
): string {
  if (!parseSwhid(core)) throw new Error(`not a SWHID: ${core}`);
  let s = core;
  // Qualifier values must escape ';' (the separator) and '%' per the spec (percent-encoding).
  const esc = (v: string) => v.replace(/%/g, '%25').replace(/;/g, '%3B');
  if (q.origin) s += `;origin=${esc(originUrl(q.origin))}`;
  if (q.anchor) s += `;anchor=${q.anchor.startsWith('swh:') ? q.anchor : revisionSwhid(q.anchor)}`;
  if (q.path) s += `;path=${esc(q.path.startsWith('/') ? q.path : '/' + q.path)}`;
  if (q.lines) s += `;lines=${q.lines[0]}${q.lines[1] !== q.lines[0] ? '-' + q.lines[1] : ''}`;
  return s;
}

/** Parse a core SWHID into its object type and hash, or null if malformed. */
export function parseSwhid(s: string): { type: 'cnt' | 'dir' | 'rev' | 'rel' | 'snp'; hash: string } | null {
  const m = /^swh:1:(cnt|dir|rev|rel|snp):([0-9a-f]{40})$/.exec(s.split(';')[0]);
  return m ? { type: m[1] as 'cnt', hash: m[2] } : null;
}
