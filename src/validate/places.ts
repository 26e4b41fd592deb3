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
import { realpathSync } from 'node:fs';
import path from 'node:path';

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

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// a harness frame: `File "<nnrag_harness/stages.py>", line 294, in _instantiate_forward`
// (the package's modules are compiled under that name, harness.py _load_package), or the
// entry point harness.py (`/nnrag/harness.py` in the sandbox, a `nnrag-validate-*` scratch
// folder without it, environment.ts workerCommand)
const HARNESS_FRAME =
  /File "(<nnrag_harness\/[^">]+>|(?:\/nnrag|\/[^"]*\/nnrag-validate-[^/"]+)\/harness\.py)", line \d+, in /g;

/** Rewrites texts: folders to their names, harness frames without line numbers. */
export class Places {
  private readonly re: RegExp | null;
  private readonly byDir = new Map<string, string>();

  constructor(places: readonly Place[]) {
    for (const p of places) {
      const dir = p.dir.replace(/\/+$/, '');
      if (!dir) continue;
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
  }

  /** The text with every known folder named and harness frames without line numbers. */
  name(text: string): string;
  name(text: string | null | undefined): string | null | undefined;
  name(text: string | null | undefined): string | null | undefined {
    if (typeof text !== 'string' || !text) return text;
    let out = text.replace(HARNESS_FRAME, (_m, file: string) =>
      file.startsWith('<') ? `File "${file}", in ` : 'File "<harness.py>", in ',
    );
    if (this.re) out = out.replace(this.re, (d: string) => this.byDir.get(d) ?? d);
    return out;
  }
}
