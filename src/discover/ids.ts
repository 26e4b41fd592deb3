// Block ids. A block is named by its qualified name `module.Class` (what Python code
// imports it by). When two indexed repositories define the same qualified name (research
// repositories reuse `models.common`, `utils.general`), the id carries the repository:
// `WongKinYiu/yolov7:models.common.Conv`. Every command, JSON record, library file,
// spec, search document and catalog page uses the id as discovery gave it.

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

/** File name stem for an id (library files, `<stem>.py`): the characters a repository
 *  name brings that cannot be in a file name (`/`, and `:` which several file systems
 *  refuse) are percent-encoded (RFC 3986 §2.1), so the mapping stays one to one. */
export function idFileStem(id: string): string {
  return id.replace(/[%/:\\]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}
