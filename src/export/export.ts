// `nnrag export ID --into DIR`: copy a library block into another project as a module
// of that project, keeping the provenance header, and merge the block's requirements into
// the project's requirements.txt.
//
// Safety rules:
//  - nothing is written outside DIR: the module name must be a dotted Python identifier
//    (PEP 8 module names; keywords refused), every path is resolved and checked to stay
//    under the real path of DIR, and an existing path component or target that is a
//    symbolic link leading outside DIR is refused;
//  - an existing file is never replaced without `force` (an identical file is left alone);
//  - files are written atomically (temporary file in the same folder, then rename), so a
//    crash leaves either the old or the new file;
//  - values of the record reach the file only as comment lines (`commentBlock`: split on
//    every Unicode line break, control characters escaped), and the usage snippet only
//    when it has the validator's rendered shape (`plainUsage`).
//
// Requirements merge (requirements file format of pip; PEP 508 names): a requirement of the
// block whose distribution the file already names is left as the project wrote it (its
// pin wins); names are compared after PEP 503 normalisation (case-insensitive, runs of
// `-`, `_`, `.` equal). Comments, options (`-r`, `-e`, `--index-url`) and order are kept;
// new requirements are appended.
import { commentBlock, PYTHON_KEYWORDS } from '../util/python.js';
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { IndexStore } from '../store/store.js';
import { getExtraction } from '../store/records.js';
import { storeValuePlaces } from '../validate/places.js';
import type { BlockRecord } from '../records/block.js';
import {
  compareVersions,
  pinImportedPackages,
  requirementLines,
  resolveRequirements,
  testedPin,
  topLevelName,
} from '../environment/requirements.js';
import { KNOWN_DISTRIBUTIONS, normalizeDistName } from '../environment/names.js';
import { USAGE_MAX_CHARS, validationsOf, type EnvValidation } from '../records/block.js';
import { NnragError, UsageError } from '../util/errors.js';
import { ensureDir, isInside, writeFileAtomic } from '../util/fs.js';
import { buildDoc, storedSpec } from '../search/documents.js';

const PY_KEYWORDS = PYTHON_KEYWORDS;

export interface ExportOptions {
  into: string;
  /** dotted module name inside the project (default: the class name in snake case, `moduleNameFor`) */
  module?: string;
  force?: boolean;
  /** requirements to merge instead of those derived from the block's extern imports */
  requirements?: string[];
  /** interpreter whose installed versions pin the requirements instead of the recorded
   *  facts of the environments the block passed in (records without facts: the
   *  interpreter that validated, else /usr/bin/python3) */
  python?: string;
  /** export a block that failed validation (refused otherwise) */
  allowFailed?: boolean;
  /** the module text of another emission profile than the library holds (`--profile
   *  faithful` of a slim block, emitted again from the indexed sources), and its name */
  profileText?: { profile: string; text: string };
}

/** The emission profile of a stored record and why it is not slim, if it fell back. */
export function heldProfile(record: Pick<BlockRecord, 'emission'>): { profile: string; fallbackReason: string | null } {
  return { profile: record.emission?.profile ?? 'faithful', fallbackReason: record.emission?.fallbackReason ?? null };
}

export interface ExportReport {
  id: string;
  module: string;
  file: string;
  /** 'written' | 'replaced' | 'unchanged' */
  action: string;
  requirementsFile: string | null;
  /** requirement lines appended to the file */
  added: string[];
  /** block requirements the project already names (its line is kept) */
  kept: string[];
  /** package __init__.py files created for a dotted module name */
  packages: string[];
  /** how to import the block inside the project */
  importLine: string;
  /** the construction and call that passed validation, when recorded */
  usage: string | null;
  /** why a validated block has no usage line (the record's `usageSkipped`) */
  usageSkipped: string | null;
  /** for a seeded usage line (the record's `usageCheck: 'seeded'`): how an unseeded draw
   *  fails with the same values (`usageDraws`) */
  usageDraws: string | null;
}

/** `WindowAttention` → `window_attention`, `MHSABlock` → `mhsa_block`. */
export function snakeCase(name: string): string {
  const s = name
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]/g, '_')
    .toLowerCase();
  return /^[0-9]/.test(s) ? `_${s}` : s;
}

export function checkModuleName(name: string): string[] {
  const parts = name.split('.');
  for (const p of parts) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(p))
      throw new UsageError(`--module ${JSON.stringify(name)}: ${JSON.stringify(p)} is not a Python identifier`);
    if (PY_KEYWORDS.has(p)) throw new UsageError(`--module ${JSON.stringify(name)}: ${p} is a Python keyword`);
  }
  return parts;
}

/** Check that writing `target` (under `root`, a real path) cannot land outside `root`:
 *  every existing component from root to target must be a real folder inside root, or a
 *  symbolic link whose real path is inside root. */
export function checkPathSafe(root: string, target: string): void {
  const abs = path.resolve(root, target);
  if (!isInside(root, abs)) throw new NnragError(`refusing to write ${abs}: outside ${root}`, 'unsafe-path');
  const rel = path.relative(root, abs);
  let cur = root;
  for (const part of rel.split(path.sep).filter(Boolean)) {
    cur = path.join(cur, part);
    let st;
    try {
      st = lstatSync(cur);
    } catch {
      break; // does not exist: nothing below can be a link either
    }
    if (st.isSymbolicLink()) {
      let real: string;
      try {
        real = realpathSync(cur);
      } catch {
        throw new NnragError(`refusing to write through ${cur}: dangling symbolic link`, 'unsafe-path');
      }
      if (!isInside(root, real))
        throw new NnragError(
          `refusing to write through ${cur}: symbolic link to ${real}, outside ${root}`,
          'unsafe-path',
        );
    }
  }
}

/** The distribution name of one requirements-file line, or null for comments, blanks, options. */
export function requirementName(line: string): string | null {
  const s = line.replace(/(^|\s)#.*$/, '').trim();
  if (!s || s.startsWith('-')) return null;
  // PEP 508: a name is letters/digits with `-`, `_`, `.` inside
  const m = s.match(/^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)/);
  return m ? m[1] : null;
}

/** Merge requirement lines into a requirements file's text. */
export function mergeRequirements(
  existing: string,
  reqs: readonly string[],
): { text: string; added: string[]; kept: string[] } {
  const have = new Set<string>();
  for (const line of existing.split(/\r?\n/)) {
    const n = requirementName(line);
    if (n) have.add(normalizeDistName(n));
  }
  const added: string[] = [];
  const kept: string[] = [];
  for (const r of reqs) {
    const n = requirementName(r);
    if (!n) continue;
    const key = normalizeDistName(n);
    if (have.has(key)) kept.push(r);
    else {
      have.add(key);
      added.push(r.trim());
    }
  }
  let text = existing;
  if (added.length) {
    if (text && !text.endsWith('\n')) text += '\n';
    text += added.join('\n') + '\n';
  }
  return { text, added, kept };
}

/** PEP 508 requirement lines of the block, saying what was tested:
 *  - from the environments it passed in (their recorded facts: the installed
 *    distributions of what the block imports), each distribution at the lowest version
 *    it passed with, as a lower bound (`torch>=2.6.0`); an extern import no tested
 *    distribution provides by name, bare;
 *  - for records without environment facts: the spec's requirements, else the extern
 *    imports as installed in `python` (the interpreter that validated, or --python),
 *    else bare distribution names, each pinned the same way. */
async function blockRequirements(
  externs: string[],
  passed: EnvValidation[],
  known: string[] | null,
  python?: string,
): Promise<string[]> {
  const tested = passed.filter((v) => v.environment?.distributions?.length);
  if (tested.length) {
    const lowest = new Map<string, { name: string; version: string }>();
    for (const v of tested) {
      for (const d of v.environment!.distributions!) {
        const i = d.indexOf('==');
        if (i <= 0) continue;
        const name = d.slice(0, i);
        const version = d.slice(i + 2);
        const key = normalizeDistName(name);
        const had = lowest.get(key);
        if (!had || compareVersions(version, had.version) < 0) lowest.set(key, { name, version });
      }
    }
    const out = new Map<string, string>();
    for (const [key, { name, version }] of lowest) out.set(key, testedPin(name, version));
    // imports no tested environment had a distribution for: required by name
    for (const v of tested) {
      for (const n of v.environment!.unpinned ?? []) {
        const dist = KNOWN_DISTRIBUTIONS[n] ?? n;
        if (!out.has(normalizeDistName(dist))) out.set(normalizeDistName(dist), dist);
      }
    }
    return [...out.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, l]) => l);
  }
  let lines: string[];
  if (known) lines = known;
  else if (!externs.length) return [];
  else {
    try {
      lines = requirementLines(await resolveRequirements(externs, { python }));
    } catch {
      const names = [...new Set(externs.map(topLevelName).filter((n): n is string => !!n))];
      return names.map((n) => KNOWN_DISTRIBUTIONS[n] ?? n).sort();
    }
  }
  return lines.map((l) => {
    const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*===?\s*(\S+)$/.exec(l.trim());
    return m ? testedPin(m[1], m[2]) : l;
  });
}

/** The tested versions of an environment for the exported header:
 *  `python 3.13.5, torch 2.9.1, einops 0.8.1 (LABEL)`. */
function testedLine(v: EnvValidation): string {
  const env = v.environment;
  if (!env) return v.label;
  const others = (env.distributions ?? []).filter((d) => !d.startsWith('torch==')).map((d) => d.replace('==', ' '));
  return (
    [`python ${env.python}`, `torch ${env.torch}`, ...others].join(', ') +
    ` (${env.rootfs ?? env.venv ?? env.interpreter ?? (env.lock ? `PyPI environment, lock ${env.lock}` : env.id)})`
  );
}

/** Readable module name for a class: snake case, where camel-case fragments of one or two
 *  letters that are not words of their own are joined to the fragment before them
 *  (`ViT` → `vit`, not `vi_t`; `ConvNeXtBlock` → `conv_next_block`). */
export function moduleNameFor(className: string): string {
  const parts = snakeCase(className).split('_').filter(Boolean);
  const out: string[] = [];
  for (const p of parts) {
    const prev = out[out.length - 1];
    const short = /^[a-z]{1,2}$/.test(p);
    if (prev !== undefined && short && (p.length === 1 || /^[a-z]{1,2}$/.test(prev))) out[out.length - 1] = prev + p;
    else out.push(p);
  }
  const name = out.join('_') || 'block';
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

/** Standard modules a usage snippet may import (snippet.py IMPORTABLE). */
const SNIPPET_IMPORTS = new Set(['functools', 'argparse', 'math', 'random']);
/** A seeded line's seeding statements (snippet.py SEEDERS, seed_statement): torch's
 *  generator, Python's (after `import random`), seeded with a non-negative integer. */
const SEED_STATEMENT = /^(?:torch\.manual_seed|(random)\.seed)\((?:0|[1-9][0-9]*)\)$/;
const PY_TOKEN =
  /\s+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[()[\]{},:=.-]|./gy;

/** The imports a usage snippet runs after (snippet.py usage_namespace): torch, what
 * `from module import *` gives, and by name each name of the module that `*` leaves out
 * (a name starting with an underscore, or any name of a module that defines `__all__`;
 * Language Reference 7.11): the block's own class, and the module's top-level names the
 * snippet uses (a private usage root such as `_Shift`). */
export function usageImports(
  moduleName: string,
  className: string,
  text: string | null,
  usage: string | null = null,
): string[] {
  const lines = ['import torch', `from ${moduleName} import *`];
  const all = /^__all__\s*[:=]/m.test(text ?? '');
  const byName = [className, ...snippetNames(usage).filter((n) => n !== className && boundAtTopLevel(text ?? '', n))];
  const named = byName.filter((n) => all || n.startsWith('_'));
  if (named.length) lines.push(`from ${moduleName} import ${named.join(', ')}`);
  return lines;
}

/** The names a usage snippet reads from the module (each once, in order): identifiers
 *  not after a `.` (an attribute), not before a lone `=` (a keyword argument, an
 *  assignment's target), outside string literals, other than `torch` and the standard
 *  modules the snippet imports itself. */
function snippetNames(usage: string | null): string[] {
  const out: string[] = [];
  if (!usage) return out;
  // the line's own import lines bind what they import (an installed distribution's names)
  const lines = usage.split('\n');
  const own = new Set(
    lines.flatMap(
      (l) =>
        /^from \S+ import (.+)$/
          .exec(l)?.[1]
          .split(',')
          .map((n) => n.trim()) ?? [],
    ),
  );
  const body = lines.filter((l) => !/^(?:import|from) /.test(l)).join('\n');
  const toks: string[] = [];
  PY_TOKEN.lastIndex = 0;
  for (let m = PY_TOKEN.exec(body); m; m = PY_TOKEN.exec(body)) if (!/^\s+$/.test(m[0])) toks.push(m[0]);
  toks.forEach((t, i) => {
    if (
      !/^[A-Za-z_][A-Za-z0-9_]*$/.test(t) ||
      PY_KEYWORDS.has(t) ||
      t === 'torch' ||
      SNIPPET_IMPORTS.has(t) ||
      own.has(t) ||
      toks[i - 1] === '.' ||
      toks[i + 1] === '='
    )
      return;
    if (!out.includes(t)) out.push(t);
  });
  return out;
}

/** Whether the module text binds `name` at its top level: a class or function
 *  definition, an assignment, or an import that binds it (Language Reference 4.2.1). */
function boundAtTopLevel(text: string, name: string): boolean {
  const n = name.replace(/[^A-Za-z0-9_]/g, '');
  return new RegExp(
    `^(?:(?:async\\s+)?def\\s+${n}\\b|class\\s+${n}\\b|${n}\\s*(?::[^=\\n]*)?=(?!=)|(?:from\\s+\\S+\\s+)?import\\s+.*\\b(?:as\\s+)?${n}\\s*(?:,|$))`,
    'm',
  ).test(text);
}

/** The distributions (PEP 503 names) a set of requirement lines or `name==version`
 *  entries names: a usage line may import from the packages of these only. */
export function distributionNames(lines: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const l of lines) {
    const n = requirementName(l);
    if (n) out.add(normalizeDistName(n));
  }
  return out;
}

/** Whether a usage line's `from P import N` may stand: P's top-level package is provided
 *  by one of `distributions` (named like it, or by KNOWN_DISTRIBUTIONS: `PIL` is Pillow),
 *  never torch (the snippet spells torch by its own paths). */
export function importableFrom(distributions: ReadonlySet<string>): (module: string) => boolean {
  return (module) => {
    const top = module.split('.')[0];
    if (top === 'torch') return false;
    return distributions.has(normalizeDistName(KNOWN_DISTRIBUTIONS[top] ?? top));
  };
}

/** The stored usage snippet when it has the shape the validator's renderer writes
 *  (snippet.py, checked there with `ast`): printable ASCII, `import` lines of
 *  SNIPPET_IMPORTS and `from P import N, M` lines of public names (no part starting with
 *  an underscore, not relative, no `as`) of a package `importable` accepts (an installed
 *  distribution the export pins: `importableFrom`; none without it), then a seeded line's
 *  `torch.manual_seed(N)` / `random.seed(N)` (SEED_STATEMENT), then the generated
 *  assignments of objects built field by field
 *  (`value1 = Holder()`, `value1.width = 4`: a plain name, or an attribute of a name an
 *  earlier line assigned, no dunder), then one expression; every value made of names,
 *  attributes, calls, keywords, numbers, strings, containers and unary minus; else null.
 *  A record written before that renderer (or edited by hand) is not shown or exported as
 *  code. */
export function plainUsage(
  usage: string | null | undefined,
  importable: (module: string) => boolean = () => false,
): string | null {
  if (typeof usage !== 'string' || !usage || usage.length > USAGE_MAX_CHARS || !/^[\x20-\x7e\n]+$/.test(usage))
    return null;
  const lines = usage.split('\n');
  const expr = lines.pop()!;
  const publicName = (p: string) => /^[A-Za-z][A-Za-z0-9_]*$/.test(p) && !PY_KEYWORDS.has(p);
  let i = 0;
  for (; i < lines.length; i++) {
    const m = /^import ([a-z]+)$/.exec(lines[i]);
    if (m) {
      if (!SNIPPET_IMPORTS.has(m[1])) return null;
      continue;
    }
    const f = /^from ([A-Za-z0-9_.]+) import ([A-Za-z0-9_, ]+)$/.exec(lines[i]);
    if (!f) break;
    if (!f[1].split('.').every(publicName) || !f[2].split(', ').every(publicName) || !importable(f[1])) return null;
  }
  // a seeded line's `torch.manual_seed(1)` / `random.seed(1)` (after `import random`),
  // each generator once, before anything is built
  const seeded = new Set<string>();
  for (; i < lines.length; i++) {
    const m = SEED_STATEMENT.exec(lines[i]);
    if (!m) break;
    const gen = m[1] ?? 'torch';
    if (seeded.has(gen) || (gen === 'random' && !lines.includes('import random'))) return null;
    seeded.add(gen);
  }
  const assigned = new Set<string>();
  for (; i < lines.length; i++) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))? = (.+)$/.exec(lines[i]);
    if (!m || !(plainExpression(m[3]) || (m[2] === undefined && madeWithoutConstructor(m[3])))) return null;
    const [, name, attr] = m;
    if (PY_KEYWORDS.has(name) || name.startsWith('__') || attr?.startsWith('__') || (attr && PY_KEYWORDS.has(attr)))
      return null;
    if (attr === undefined) assigned.add(name);
    else if (!assigned.has(name)) return null;
  }
  return plainExpression(expr) ? usage : null;
}

/** `Class.__new__(Class)`, the same plain name or dotted path twice (no dunder, no
 *  keyword in it): an object the snippet makes without running its constructor, then
 *  gives its fields (snippet.py `_is_new`). */
function madeWithoutConstructor(expr: string): boolean {
  const m = /^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\.__new__\(([A-Za-z0-9_.]+)\)$/.exec(expr);
  if (!m || m[1] !== m[2]) return false;
  return m[1].split('.').every((p) => !p.startsWith('__') && !PY_KEYWORDS.has(p));
}

/** One expression of the snippet's shape: brackets balance, no `;`, no operator but unary
 *  minus, `=` only as a keyword inside a call, `,` only inside brackets, no keyword but
 *  None/True/False, no dunder name, no prefixed string literal. */
function plainExpression(expr: string): boolean {
  const stack: string[] = [];
  let prev = '';
  PY_TOKEN.lastIndex = 0;
  for (let m = PY_TOKEN.exec(expr); m; prev = m[0], m = PY_TOKEN.exec(expr)) {
    const t = m[0];
    // a string right after a name is a prefixed literal (f"{code}" runs code): refused
    if (/^["']/.test(t) && /^[A-Za-z_]/.test(prev)) return false;
    if (/^\s+$/.test(t) || /^["']/.test(t) || (/^[.\d]/.test(t) && t !== '.')) continue;
    if (/^[A-Za-z_]/.test(t)) {
      if ((PY_KEYWORDS.has(t) && !['None', 'True', 'False'].includes(t)) || t.startsWith('__')) return false;
      continue;
    }
    if ('([{'.includes(t)) stack.push(t);
    else if (')]}'.includes(t)) {
      if (stack.pop() !== { ')': '(', ']': '[', '}': '{' }[t]) return false;
    } else if (t === ',' || t === ':' || t === '=') {
      if (
        !stack.length ||
        (t === '=' && stack[stack.length - 1] !== '(') ||
        (t === ':' && stack[stack.length - 1] !== '{')
      )
        return false;
    } else if (t !== '.' && t !== '-') return false;
  }
  return stack.length === 0;
}

/** The first stage a record failed and its category, or null when nothing failed. */
function failedStage(stages: Record<string, string> | null, category: string | null): string | null {
  if (!stages) return null;
  const stage = Object.entries(stages).find(([, s]) => s === 'fail')?.[0];
  return stage ? `${stage}${category ? ` (${category})` : ''}` : null;
}

export async function exportBlock(store: IndexStore, id: string, opts: ExportOptions): Promise<ExportReport> {
  const e = getExtraction(store, id);
  if (!e?.text) throw new NnragError(`no library block ${JSON.stringify(id)}`, 'unknown-block');
  const doc = buildDoc(store, e, storedSpec(store, id));
  const validation = e.record.validation;
  const failed = e.status === 'failed' ? (failedStage(doc.stages, validation?.category ?? null) ?? 'validation') : null;
  if (failed && !opts.allowFailed) {
    throw new NnragError(
      `${id} failed at ${failed}; it is not a validated block (export it anyway with --allow-failed)`,
      'failed-block',
    );
  }
  const moduleName = opts.module ?? moduleNameFor(doc.name);
  const parts = checkModuleName(moduleName);
  if (!opts.into) throw new UsageError('--into DIR is required');
  ensureDir(opts.into, 'export folder');
  const root = realpathSync(opts.into);

  const file = path.join(root, ...parts.slice(0, -1), `${parts[parts.length - 1]}.py`);
  const reqFile = path.join(root, 'requirements.txt');
  checkPathSafe(root, file);
  checkPathSafe(root, reqFile);

  const passed = doc.stages
    ? Object.entries(doc.stages)
        .filter(([, s]) => s === 'pass')
        .map(([k]) => k)
    : [];
  // the environments the block passed in (failed export: the one that ran), with what
  // each had installed: the header lists them, the requirements are their lower bounds
  const envs = Object.values(validationsOf(e.record));
  const testedIn = failed ? envs : envs.filter((v) => v.ok);
  const state = failed
    ? `FAILED at ${failed}; passed: ${passed.join(', ') || 'none'}`
    : `${e.status}${passed.length ? ': ' + passed.join(', ') : ''}`;
  // the distributions a slim module imports instead of copying are pinned to the version
  // it was validated against (not when another profile was emitted again from the sources)
  const imported = opts.profileText ? [] : (e.record.emission.packages ?? []);
  const reqs =
    opts.requirements ??
    pinImportedPackages(
      await blockRequirements(
        doc.externs,
        opts.python ? [] : testedIn,
        doc.requirements,
        opts.python ?? validation?.python,
      ),
      imported,
    );
  // a usage line importing from an installed distribution is exported when the
  // requirements pin that distribution (the environment that ran it had it)
  // (its values name checkouts by place, `<owner/name>/cfg.yaml`: written with this
  // machine's checkout, the line runs here as it ran when validated)
  const usage = plainUsage(
    validation?.usage ? storeValuePlaces(store).localText(validation.usage) : validation?.usage,
    importableFrom(distributionNames(reqs)),
  );
  const usageSkipped = usage
    ? null
    : validation?.usage
      ? 'the recorded usage line imports from a distribution the requirements do not pin'
      : (validation?.usageSkipped ?? null);
  // a seeded line says why it seeds: an unseeded draw fails with these values
  const usageDraws =
    usage && validation?.usageCheck === 'seeded' ? (validation.usageDraws ?? 'another random draw fails') : null;
  // every value of the record reaches the file only inside comment lines (commentBlock:
  // split on every line break, control characters escaped), so none can become code
  const header =
    commentBlock(`Exported by nnrag from ${id} (${state}).`) +
    '\n' +
    (opts.profileText
      ? commentBlock(
          `${opts.profileText.profile} profile, emitted again from the indexed sources (the library holds the ${heldProfile(e.record).profile} module, which is what was validated).`,
        ) + '\n'
      : '') +
    (usage && !failed
      ? `# Usage, as validated (after ${usageImports(moduleName, doc.name, e.text, usage)
          .map((l) => `\`${l}\``)
          .join(', ')}):\n${commentBlock(usage, '#     ')}\n${
          usageDraws ? commentBlock(`The line seeds the random generators: ${usageDraws}`) + '\n' : ''
        }`
      : usageSkipped && !failed
        ? commentBlock(`No usage line: ${usageSkipped}`) + '\n'
        : '') +
    testedIn.map((v) => commentBlock(`${failed ? 'Ran' : 'Tested'} with: ${testedLine(v)}`) + '\n').join('') +
    `# The provenance lines below say where every definition comes from; keep them with the code.\n`;
  const text = header + (opts.profileText?.text ?? e.text);

  let action = 'written';
  if (existsSync(file) || isLink(file)) {
    const st = lstatSync(file);
    if (!st.isFile() && !st.isSymbolicLink()) throw new NnragError(`${file} exists and is not a file`, 'exists');
    const same = st.isFile() && readFileSync(file, 'utf8') === text;
    if (same) action = 'unchanged';
    else if (!opts.force) throw new NnragError(`${file} exists; use --force to replace it`, 'exists');
    else action = 'replaced';
  }

  const existingReq = existsSync(reqFile) ? readFileSync(reqFile, 'utf8') : '';
  const merged = mergeRequirements(existingReq, reqs);

  // create packages for a dotted name: only folders made here get an __init__.py
  const packages: string[] = [];
  let dir = root;
  for (const p of parts.slice(0, -1)) {
    dir = path.join(dir, p);
    if (!existsSync(dir)) {
      mkdirSync(dir);
      const init = path.join(dir, '__init__.py');
      writeFileAtomic(init, '', { createDirs: false });
      packages.push(init);
    } else if (!lstatSync(realpathSync(dir)).isDirectory())
      throw new NnragError(`${dir} exists and is not a folder`, 'exists');
  }
  checkPathSafe(root, file);
  if (action !== 'unchanged') writeFileAtomic(file, text, { createDirs: false });
  if (merged.added.length) writeFileAtomic(reqFile, merged.text, { createDirs: false });

  return {
    id,
    module: moduleName,
    file,
    action,
    requirementsFile: merged.added.length || existingReq ? reqFile : null,
    added: merged.added,
    kept: merged.kept,
    packages,
    importLine: `from ${moduleName} import ${doc.name}`,
    usage: usage ?? null,
    usageSkipped: failed ? null : usageSkipped,
    usageDraws: failed ? null : usageDraws,
  };
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
