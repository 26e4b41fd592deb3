// The files installed distributions put on a validation environment's sys.path, read from
// their RECORD (the installed-distribution format: `<name>-<version>.dist-info/RECORD`,
// one `path,sha256=<urlsafe base64, no padding>,size` line per file, PEP 376 and PEP 627),
// their METADATA's `Name` and `Version` (core metadata), and `direct_url.json` (PEP 610).
// Slim emission asks it whether a module of an indexed repository is installed there
// with the very same bytes: then a definition the block needs from that module is
// imported from the installed package instead of copied (src/emit/slim, closure.ts
// `BuildOptions.installed`).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { normalizeDistName } from './names.js';

/** The installed file of a module, and the distribution whose RECORD lists it. */
export interface InstalledModule {
  /** PEP 503 normalised distribution name */
  distribution: string;
  /** its version as METADATA gives it */
  version: string;
  /** the sys.path entry the file is found under */
  entry: string;
  /** the file, relative to `entry` (posix) */
  file: string;
}

interface RecordRow {
  distribution: string;
  version: string;
  sha256: string;
}

/** The files of the distributions installed on one sys.path (read lazily, once). */
export class InstalledFiles {
  private readonly records = new Map<string, Map<string, RecordRow>>();
  private readonly located = new Map<string, string | null>();

  /** `sysPath`: the interpreter's sys.path (the probe's `path`), in order. */
  constructor(readonly sysPath: readonly string[]) {}

  /** The installed file that `import <module>` loads (`isPackage`: the module is a
   *  package, its file `__init__.py`), when a distribution's RECORD lists it; null when
   *  no installed distribution provides it there (not installed, an editable install
   *  whose files stay in the checkout, a path entry without metadata). */
  module(module: string, isPackage: boolean): InstalledModule | null {
    const parts = module.split('.');
    const entry = this.entryOf(parts[0]);
    if (entry === null) return null;
    const file = isPackage ? [...parts, '__init__.py'].join('/') : `${parts.join('/')}.py`;
    const row = this.recordOf(entry).get(file);
    if (!row) return null;
    return { distribution: row.distribution, version: row.version, entry, file };
  }

  /** The bytes of an installed module file when they are the ones its RECORD lists (a
   *  file changed after installation is not the distribution's). */
  bytes(m: InstalledModule): Buffer | null {
    const row = this.recordOf(m.entry).get(m.file);
    let buf: Buffer;
    try {
      buf = readFileSync(path.join(m.entry, ...m.file.split('/')));
    } catch {
      return null;
    }
    return row && recordDigest(buf) === row.sha256 ? buf : null;
  }

  /** The file `import <module>` loads from this sys.path, whether or not a RECORD lists it
   *  (an editable install, a path entry without metadata): the first entry holding the
   *  top-level name (§5.5), then `a/b/__init__.py` (a regular package), `a/b.py`, an
   *  extension module `a/b.*.so` (`file` null: no source) or a folder without `__init__.py`
   *  holding modules (a namespace portion, PEP 420; `file` null); null when there is none. */
  locate(module: string): { isPackage: boolean; file: string | null } | null {
    const parts = module.split('.');
    const entry = this.entryOf(parts[0]);
    if (entry === null) return null;
    const base = path.join(entry, ...parts);
    if (isDir(base)) {
      const init = path.join(base, '__init__.py');
      if (existsSync(init)) return { isPackage: true, file: init };
      // a namespace portion holds modules; a folder of type stubs only (`__init__.pyi`,
      // PEP 561) or of data is no module the code imports
      let inside: string[];
      try {
        inside = readdirSync(base);
      } catch {
        return null;
      }
      const modules = inside.some(
        (n) =>
          n.endsWith('.py') ||
          n.endsWith('.so') ||
          (n !== '__pycache__' && existsSync(path.join(base, n, '__init__.py'))),
      );
      return modules ? { isPackage: true, file: null } : null;
    }
    if (existsSync(`${base}.py`)) return { isPackage: false, file: `${base}.py` };
    const last = parts[parts.length - 1];
    let names: string[];
    try {
      names = readdirSync(path.dirname(base));
    } catch {
      return null;
    }
    // an extension module: `name.so` or `name.<platform tag>.so` (PEP 3149)
    return names.some((n) => n.startsWith(`${last}.`) && n.endsWith('.so')) ? { isPackage: false, file: null } : null;
  }

  /** The first sys.path entry holding top-level module `top` (a package folder or a
   *  `top.py`): the import system's path finder takes the first (Language Reference §5.5). */
  private entryOf(top: string): string | null {
    let e = this.located.get(top);
    if (e === undefined) {
      e = null;
      for (const p of this.sysPath) {
        if (!p || !isDir(p)) continue;
        if (isDir(path.join(p, top)) || existsSync(path.join(p, `${top}.py`))) {
          e = p;
          break;
        }
      }
      this.located.set(top, e);
    }
    return e;
  }

  /** RECORD rows of every `*.dist-info` of one path entry, by file. */
  private recordOf(entry: string): Map<string, RecordRow> {
    let m = this.records.get(entry);
    if (m) return m;
    m = new Map();
    this.records.set(entry, m);
    let names: string[];
    try {
      names = readdirSync(entry).filter((n) => n.endsWith('.dist-info'));
    } catch {
      return m;
    }
    for (const d of names.sort()) {
      const dir = path.join(entry, d);
      const meta = readText(path.join(dir, 'METADATA'));
      const record = readText(path.join(dir, 'RECORD'));
      if (meta === null || record === null) continue;
      const name = /^Name:\s*(.+)$/m.exec(meta)?.[1]?.trim();
      const version = /^Version:\s*(.+)$/m.exec(meta)?.[1]?.trim();
      if (!name || !version) continue;
      const distribution = normalizeDistName(name);
      for (const line of record.split('\n')) {
        const row = parseRecordLine(line);
        if (row && !m.has(row.file)) m.set(row.file, { distribution, version, sha256: row.sha256 });
      }
    }
    return m;
  }
}

/** One RECORD line: `path,algorithm=digest,size` (a CSV row; a path with a comma is
 *  quoted). Only sha256 rows are used: a row without a hash (RECORD itself, .pyc files)
 *  proves nothing. */
export function parseRecordLine(line: string): { file: string; sha256: string } | null {
  const s = line.replace(/\r$/, '');
  if (!s) return null;
  let file: string;
  let rest: string;
  if (s.startsWith('"')) {
    const close = s.indexOf('",', 1);
    if (close < 0) return null;
    file = s.slice(1, close).replace(/""/g, '"');
    rest = s.slice(close + 2);
  } else {
    const comma = s.indexOf(',');
    if (comma < 0) return null;
    file = s.slice(0, comma);
    rest = s.slice(comma + 1);
  }
  const hash = rest.split(',')[0];
  if (!hash.startsWith('sha256=')) return null;
  // RECORD paths are relative to the folder holding the .dist-info, with `/` separators
  if (file.startsWith('/') || file.split('/').includes('..')) return null;
  return { file, sha256: hash.slice('sha256='.length) };
}

/** The digest RECORD writes: sha256, urlsafe base64 without `=` padding. */
export function recordDigest(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('base64url');
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
