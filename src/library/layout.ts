// The library folder's layout, in one place: which folder a block's files go to by its
// status, and their names. `<library>` is `--out`, default `<store>/library`.
//   <library>/blocks/<stem>.py       validated and promoted (passed the required stages)
//   <library>/failed/<stem>.py       validated and failed; <stem>.json says stage, category, error
//   <library>/extracted/<stem>.py    emitted, not validated
//   next to each module: <stem>.spec.json and <stem>.required_repos.json (the library stage)
//   <library>/required_repos.json, <library>/requirements.txt  (the whole library)
// `<stem>` is the block id with its repository part percent-encoded (discover/ids.ts).
// A block's files live in exactly one status folder: placing them removes copies from the
// other two.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { idFileStem } from '../discover/ids.js';
import { writeFileAtomic } from '../util/fs.js';
import type { BlockStatus } from '../records/block.js';

export type StatusFolder = 'blocks' | 'failed' | 'extracted';

const FOLDERS: Record<BlockStatus, StatusFolder> = { validated: 'blocks', failed: 'failed', extracted: 'extracted' };

/** The library folder: `out` when given, else `<storeDir>/library`. */
export function libraryDir(storeDir: string, out?: string): string {
  return path.resolve(out ?? path.join(storeDir, 'library'));
}

/** Folder of a block's files by stored status. */
export function statusFolder(status: BlockStatus): StatusFolder {
  return FOLDERS[status];
}

/** The stored status of a validated block. */
export function validatedStatus(ok: boolean): BlockStatus {
  return ok ? 'validated' : 'failed';
}

/** A block's file in the folder of `status`: the module (`.py`), the failure (`.json`), the
 *  spec (`.spec.json`) or the manifest (`.required_repos.json`). */
export function blockFile(out: string, status: BlockStatus, id: string, suffix: BlockFileSuffix = '.py'): string {
  return path.join(out, FOLDERS[status], `${idFileStem(id)}${suffix}`);
}

export type BlockFileSuffix = '.py' | '.json' | '.spec.json' | '.required_repos.json';

/** Write one of a block's files in the folder of its status and remove that file from the
 *  other status folders. Returns the path written. */
export function placeBlockFile(
  out: string,
  status: BlockStatus,
  id: string,
  suffix: BlockFileSuffix,
  text: string,
): string {
  const file = blockFile(out, status, id, suffix);
  writeFileAtomic(file, text);
  for (const other of Object.keys(FOLDERS) as BlockStatus[])
    if (other !== status) rmSync(blockFile(out, other, id, suffix), { force: true });
  return file;
}

/** Remove one of a block's files from every status folder. */
export function removeBlockFile(out: string, id: string, suffix: BlockFileSuffix): void {
  for (const s of Object.keys(FOLDERS) as BlockStatus[]) rmSync(blockFile(out, s, id, suffix), { force: true });
}

/** A file of the whole library (`required_repos.json`, `requirements.txt`). */
export function libraryFile(out: string, name: 'required_repos.json' | 'requirements.txt'): string {
  return path.join(out, name);
}
