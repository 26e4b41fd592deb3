// Places named by what they are (issue 28, "Same answers"): the texts a validation reports
// (error messages, tracebacks, the output tail, the reasons of the namespace and
// equivalence stages) name files by absolute paths on the machine that ran them: the
// environment's folder (`/work/envs/x/lib/python3.11/site-packages/torch/serialization.py`),
// the interpreter's standard library, a repository's checkout. Stored as they are, the
// library's `failed/*.json`, the validation cache and the block records differ between two
// machines, two checkout folders or two environment folders that ran the same thing. Here,
// in one place (`ValidatorPool.finalize` applies it to every result), a path under a known
// folder is rewritten to that folder's name and the path inside it:
//   <site-packages>/torch/serialization.py   the environment's site-packages (sysconfig
//                                            `purelib` / `platlib`)
//   <stdlib>/json/decoder.py                 the interpreter's standard library (sysconfig
//                                            `stdlib` / `platstdlib`; lib-dynload inside it)
//   <WongKinYiu/yolov9>/models/yolo.py       a repository's checkout: its configured name
//                                            (as provenance names it) and the path inside
//                                            it, as the index stores it
// and a frame of the harness itself (`File "<nnrag_harness/stages.py>", line 294, in
// _instantiate_forward`) loses its line number (file and function stay; the entry point
// harness.py, wherever it was copied, is `<harness.py>`), so that editing
// the harness does not change every stored failure. The candidate's own frames keep theirs
// (`<scratch>/candidate.py`, named by the worker, worker.py): they point into the emitted
// module stored beside the failure. The longest folder wins (a checkout inside another, a
// venv inside a checkout), every name is in angle brackets (no real path starts with `<`),
// so the mapping back is unambiguous given the environment and the configuration: replace
// `<site-packages>` by that environment's site-packages, `<owner/name>` by that
// repository's checkout. Folders of the system that are the same on every machine with the
// same system (`/usr/lib/python3/dist-packages` of Debian's interpreter) stay as they are.
//
// Values are named the same way, folders only (`nameValue`, `nameFolders`; no harness
// frames): a witness that holds a file of a checkout (a test passed
// `os.path.join(os.path.dirname(__file__), 'gelan-t.yaml')`) is stored in the harvest
// (witness/store.ts), the record's `args` and its usage line (`ValidatorPool.namePlaces`)
// as `<WongKinYiu/yolov9>/models/detect/gelan-t.yaml`; the files a harvest read
// (`depends`, `runs`, `listReads`) as well. The folders of values are those the store
// alone knows on any machine that opens it (`storePlaces`): the checkouts, the store's
// folder (`<store>`) and nnrag's home (`<nnrag-home>`, NNRAG_HOME, where environments are
// made by default). A temporary folder is not named: the sandbox has its own `/tmp`, the
// same name on every machine, and what a run puts there has a name of that run. Where a
// stored value is used on this machine it is mapped back (`localValue`, `localText`): the
// harvest as it is read from the store (every request's witnesses and providers, the
// harvest's reuse of its run steps), the arguments slim reads (pipeline.ts), and the usage
// line export and the catalog show to be copied; the validation keys and the reuse digests
// read the named values, so they are the same on every machine too. A user reading a
// record replaces `<owner/name>` by their checkout of that repository.
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { nnragHome } from '../environment/pypi.js';
import type { IndexStore } from '../store/store.js';

/** A folder and the name it is written as. */
export interface Place {
  dir: string;
  name: string;
}

/** The interpreter's folders by role (sysconfig.get_paths() of the probe, `paths`), those
 *  on its sys.path only: a virtual environment's `platstdlib` is its own `lib/python3.X`,
 *  which holds nothing of the standard library (PEP 405: that stays in the base). */
export function interpreterPlaces(
  paths: Partial<Record<string, string>> | undefined,
  sysPath: readonly string[] | undefined,
): Place[] {
  const out: Place[] = [];
  const on = new Set((sysPath ?? []).map((p) => p.replace(/\/+$/, '')));
  const add = (dir: string | undefined, name: string) => {
    if (dir && path.isAbsolute(dir) && on.has(dir.replace(/\/+$/, ''))) out.push({ dir, name });
  };
  add(paths?.stdlib, '<stdlib>');
  add(paths?.platstdlib, '<stdlib>');
  add(paths?.purelib, '<site-packages>');
  add(paths?.platlib, '<site-packages>');
  return out;
}

/** Repositories' checkouts (`root`, absolute) by their configured names (`owner/name`). */
export function repositoryPlaces(repos: readonly { name: string; root: string }[]): Place[] {
  return repos.filter((r) => path.isAbsolute(r.root)).map((r) => ({ dir: r.root, name: `<${r.name}>` }));
}

/** The folders a recorded value may name besides the interpreter's: the repositories'
 *  checkouts (`<owner/name>`), the store's folder (`<store>`) and nnrag's home
 *  (`<nnrag-home>`: NNRAG_HOME, where `nnrag env create` puts environments by default).
 *  All three are known from the store alone, on any machine that opens it, so a value
 *  named with them maps back there (`Places.localValue`). */
export function storePlaces(repos: readonly { name: string; root: string }[], storeDir?: string): Place[] {
  const out = repositoryPlaces(repos);
  // (a repository configured under one of these names keeps it: a name maps back to one folder)
  const free = (name: string) => !out.some((p) => p.name === name);
  if (storeDir && path.isAbsolute(storeDir) && free('<store>')) out.push({ dir: storeDir, name: '<store>' });
  const home = nnragHome();
  if (path.isAbsolute(home) && free('<nnrag-home>')) out.push({ dir: home, name: '<nnrag-home>' });
  return out;
}

const ofStore = new WeakMap<IndexStore, { key: string; places: Places }>();

/** The store's `storePlaces` (its repositories' checkouts as it has them now, its folder,
 *  nnrag's home), made again only when a checkout moved or a repository came or went. */
export function storeValuePlaces(store: IndexStore): Places {
  const repos = store.listRepos();
  const key = JSON.stringify(repos.map((r) => [r.name, r.root]));
  const known = ofStore.get(store);
  if (known?.key === key) return known.places;
  const places = new Places(storePlaces(repos, path.resolve(store.dir)));
  ofStore.set(store, { key, places });
  return places;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// a harness frame: `File "<nnrag_harness/stages.py>", line 294, in _instantiate_forward`
// (the package's modules are compiled under that name, harness.py _load_package), or the
// entry point harness.py (`/nnrag/harness.py` in the sandbox, a `nnrag-validate-*` scratch
// folder without it, environment.ts workerCommand)
const HARNESS_FRAME =
  /File "(<nnrag_harness\/[^">]+>|(?:\/nnrag|\/[^"]*\/nnrag-validate-[^/"]+)\/harness\.py)", line \d+, in /g;

/** `v` with `f` applied to every string in it (array items, object values), shared where
 *  nothing changed. */
function mapStrings<T>(v: T, f: (s: string) => string): T {
  if (typeof v === 'string') return f(v) as T;
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x = mapStrings(v[i] as unknown, f);
      if (x !== v[i]) (out ??= v.slice())[i] = x;
    }
    return (out ?? v) as T;
  }
  if (v && typeof v === 'object') {
    let out: Record<string, unknown> | null = null;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const y = mapStrings(x, f);
      // (defined, not assigned: a key `__proto__` of a parsed value stays a key)
      if (y !== x)
        Object.defineProperty((out ??= { ...(v as Record<string, unknown>) }), k, {
          value: y,
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    return (out ?? v) as T;
  }
  return v;
}

/** Rewrites texts: folders to their names, harness frames without line numbers. */
export class Places {
  private readonly re: RegExp | null;
  private readonly byDir = new Map<string, string>();
  /** each name's folder as given (the first place of that name), for `local` */
  private readonly byName = new Map<string, string>();
  private readonly nameRe: RegExp | null;

  constructor(places: readonly Place[]) {
    for (const p of places) {
      const dir = p.dir.replace(/\/+$/, '');
      if (!dir) continue;
      if (!this.byName.has(p.name)) this.byName.set(p.name, dir);
      // the folder as given and as the kernel resolves it: a traceback names a file by
      // the path it was imported from, which may be either
      let real = dir;
      try {
        real = realpathSync(dir);
      } catch {
        /* not on this machine: as given */
      }
      for (const d of new Set([dir, real]))
        if (d !== '/' && (!this.byDir.has(d) || this.byDir.get(d)!.length > p.name.length)) this.byDir.set(d, p.name);
    }
    const dirs = [...this.byDir.keys()].sort((a, b) => b.length - a.length || a.localeCompare(b));
    // a folder only where a path starts (not inside a longer path, `/x/work/...`) and ends
    // (followed by `/`, or by a character no path name of ours ends in: quote, space, colon)
    this.re = dirs.length ? new RegExp(`(?<![\\w.~/-])(${dirs.map(escapeRegExp).join('|')})(?![\\w.~-])`, 'g') : null;
    // a name only where a path starts, followed by `/` or by a character no path of ours
    // ends in (as `re`): `<owner/name>/models/x.yaml`, `'<store>'`
    const names = [...this.byName.keys()].sort((a, b) => b.length - a.length || a.localeCompare(b));
    this.nameRe = names.length
      ? new RegExp(`(?<![\\w.~/-])(${names.map(escapeRegExp).join('|')})(?![\\w.~-])`, 'g')
      : null;
  }

  /** The text with every known folder named (no harness frames touched): what `localText`
   *  turns back into the same text on this machine. */
  nameFolders(text: string): string {
    return this.re && text.includes('/') ? text.replace(this.re, (d: string) => this.byDir.get(d) ?? d) : text;
  }

  /** The text with every folder name of these places replaced by the folder (as given):
   *  the inverse of `nameFolders` for a folder given as it is written. */
  localText(text: string): string {
    return this.nameRe && text.includes('<') ? text.replace(this.nameRe, (n: string) => this.byName.get(n) ?? n) : text;
  }

  /** A JSON value (witnesses, a harvest's answer, a validation's arguments) with every
   *  string in it through `nameFolders` (object keys stay: none of ours is a path); a copy
   *  where anything changed. */
  nameValue<T>(v: T): T {
    return mapStrings(v, (s) => this.nameFolders(s));
  }

  /** The inverse of `nameValue`: every string through `localText`. Where a stored value
   *  is used on this machine (a validation request's witnesses and providers, the
   *  arguments slim reads, a usage line shown to be copied), it names this machine's
   *  folders again, as the value recorded where it ran did. */
  localValue<T>(v: T): T {
    return mapStrings(v, (s) => this.localText(s));
  }

  /** The text with every known folder named and harness frames without line numbers. */
  name(text: string): string;
  name(text: string | null | undefined): string | null | undefined;
  name(text: string | null | undefined): string | null | undefined {
    if (typeof text !== 'string' || !text) return text;
    const out = text.replace(HARNESS_FRAME, (_m, file: string) =>
      file.startsWith('<') ? `File "${file}", in ` : 'File "<harness.py>", in ',
    );
    return this.nameFolders(out);
  }
}
