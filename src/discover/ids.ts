// Block ids. A block is named by its qualified name `module.Class` (what Python code
// imports it by). When two indexed repositories define the same qualified name (research
// repositories reuse `models.common`, `utils.general`), the id carries the repository:
// `WongKinYiu/yolov7:models.common.Conv`. Every command, JSON record, library file,
// spec, search document and catalog page uses the id as discovery gave it.
import { createHash } from 'node:crypto';

export interface BlockIdParts {
  /** the repository when the id carries one */
  repo: string | null;
  /** `module.Class` */
  qualified: string;
  module: string;
  className: string;
}

/** Split an id into repository, module and class. A module name has no ':' (it is made of
 *  identifiers), so the repository is what comes before the last ':'. */
export function parseBlockId(id: string): BlockIdParts {
  const colon = id.lastIndexOf(':');
  const repo = colon >= 0 ? id.slice(0, colon) : null;
  const qualified = colon >= 0 ? id.slice(colon + 1) : id;
  const dot = qualified.lastIndexOf('.');
  return { repo, qualified, module: dot >= 0 ? qualified.slice(0, dot) : '', className: qualified.slice(dot + 1) };
}

/** The id of a block: `module.Class`, prefixed by `repo:` when `withRepo`. */
export function blockId(repo: string, module: string, className: string, withRepo: boolean): string {
  return withRepo ? `${repo}:${module}.${className}` : `${module}.${className}`;
}

/** Longest file name stem in bytes: a file name holds at most NAME_MAX (255) bytes on
 *  Linux file systems, and the library adds a suffix (`.required_repos.json`, 20) and
 *  writeFileAtomic's temporary name (`.<name>.<pid>.<8 hex>.tmp`, up to 24 more). */
export const MAX_STEM_BYTES = 200;

/** File name stem for an id (library files, `<stem>.py`): the characters a repository
 *  name brings that cannot be in a file name (`/`, and `:` which several file systems
 *  refuse) are percent-encoded (RFC 3986 §2.1), so the mapping stays one to one. A stem
 *  longer than MAX_STEM_BYTES (a deep module path) keeps its beginning, cut at a
 *  character boundary, and ends with `~` and 16 hex digits of the id's SHA-256: still one
 *  file per id (the record, the spec and the failure file keep the full id). */
export function idFileStem(id: string): string {
  const stem = id.replace(/[%/:\\]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
  if (Buffer.byteLength(stem) <= MAX_STEM_BYTES) return stem;
  const tag = '~' + createHash('sha256').update(id).digest('hex').slice(0, 16);
  let head = '';
  let bytes = 0;
  for (const ch of stem) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > MAX_STEM_BYTES - tag.length) break;
    head += ch;
    bytes += n;
  }
  return head + tag;
}
