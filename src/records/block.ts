// The block record: ONE typed, versioned record per block that extraction produces and
// every later stage reads (validation adds `validation`, the library stage reads it for
// specs and manifests, search and the catalog project it). It is what `--json` prints
// for extract / validate and what the store keeps next to the module text
// (src/store/records.ts decodes stored records, older ones included, into this type).
// docs/block-record.schema.json is its JSON schema, written by
// `node dist/scripts/block-record-schema.js` and checked against this type by
// test/library/record.test.ts.
//
// Fields by stage:
//   identity      version, id, repository, source (where the class is defined),
//                 signature (bases, docstring, parameters: read once, at extraction)
//   closure       diagnostics, interned, externs, moduleGraph (module edges, emit/graph.ts)
//   emission      lines, provenance, renames, emission { profile, fallbackReason }
//   validation    validation { stages, category, error, args, argumentsSource, … equivalence,
//                 environment }: the validation shown (a passing one when any passed);
//                 validations { envId: … }: one per environment the module ran in (v2)
//   library       requirements (PEP 508 pins of the externs, when resolved)
//   placement     file (where the module was written), ok, ms, error
// The flat names (`lines`, `provenance`, `interned` …) are the JSON users have always seen
// and stay where they were; what is new is grouped (`emission`, `source`).
//
// This module sits low (src/records/, below the store): it names the facts of the later
// stages the record carries (a diagnostic of the closure, a provenance entry of the
// emitter, …) so that the store, the library, search and validation all read one type and
// none of them imports a higher layer for it.
import { normalizeDistName } from '../environment/names.js';
import type { Param } from '../parse/types.js';
import type { EnvironmentFacts, ValidationRecord } from './validation.js';

/** Why a name did not resolve (resolve/names.ts). */
export type UnresolvedReason = 'missing-module' | 'undefined' | 'star-extern' | 'dynamic' | 'module-object' | 'cycle';

/** A problem the closure found (resolve/closure.ts): an error keeps the block from validating. */
export interface Diagnostic {
  severity: 'error' | 'warning';
  name: string;
  reason: UnresolvedReason | 'nested-module-import' | 'eager-cycle' | 'guarded-import' | 'module-file';
  message: string;
  module: string;
  path: string;
  repo: string;
  line: number;
}

/** Where the copied statements of one source file came from (emit/emitter.ts). */
export interface ProvenanceEntry {
  repo: string;
  revision: string | null;
  url: string | null;
  path: string;
  module: string;
  swhid: string;
  /** line ranges (1-based, inclusive) of the copied statements, in emission order */
  ranges: [number, number][];
}

/** The module edges of the copied code (emit/graph.ts `moduleGraph`). */
export interface ModuleGraph {
  /** `[reader, definer]`: copied statements of `reader` read definitions of `definer` */
  interned: [string, string][];
  /** `[reader, package]`: copied statements of `reader` use an import of the extern
   *  top-level package (one of the block's `externs`) */
  extern: [string, string][];
}

/** What slim emission left out of a copied statement (emit/slim/slim.ts). */
export interface SlimRemoval {
  kind: 'decorator' | 'registration' | 'options' | 'branch' | 'unreached';
  repo: string;
  path: string;
  module: string;
  /** original lines removed (1-based, inclusive) */
  lines: [number, number];
  /** the decorator's text, or the pruned option values */
  what: string;
}

/** The class as extraction read it (resolve/classes.ts `classSignature`). */
export interface ClassSignature {
  /** base expressions as written */
  bases: string[];
  docstring: string | null;
  /** constructor parameters without self (inherited from an indexed base when the class has no __init__) */
  init: Param[];
  forward: Param[];
}

/** Bump when a field changes meaning; the store's decoder upgrades older records. */
export const BLOCK_RECORD_VERSION = 2;

/** The longest usage snippet recorded (characters; nnrag_harness/snippet.py MAX_LEN is the
 *  same bound): a model built from a list of configuration objects, each made field by
 *  field, stays whole; a longer one is not recorded, never cut. */
export const USAGE_MAX_CHARS = 8000;

/** How the module was emitted: `faithful` keeps every binding the closure reached;
 *  `slim` (issue 12) drops what the block does not need and falls back to faithful with a
 *  reason when the slim module does not validate. */
export type EmissionProfile = 'slim' | 'faithful';

export interface EmissionFacts {
  profile: EmissionProfile;
  /** why a requested slim emission fell back to faithful */
  fallbackReason?: string;
  /** lines of the faithful module (when slim was tried) */
  faithfulLines?: number;
  /** lines of the slim module (when slim was tried; null when it emitted nothing) */
  slimLines?: number | null;
  /** what slim left out of the copied statements: decorators, options, branches, each
   *  with the original file and lines (src/emit/slim) */
  removed?: SlimRemoval[];
  /** decorators the sandbox proved to return their argument (`repo:module:line`) */
  proven?: string[];
  /** installed distributions the slim module imports from instead of copying their code
   *  (another repository's modules whose installed files are the indexed ones,
   *  src/emit/slim/packages.ts): export pins each to this version */
  packages?: { distribution: string; version: string; repo: string; modules: string[] }[];
  /** definitions copied for the usage line only (`module.name`): the validated arguments
   *  name them, the block's code does not (resolve/closure.ts usage roots, pipeline.ts) */
  usageRoots?: string[];
}

/** Where the block's class is defined (the class statement Python binds for
 *  `module.Class`, see resolve/corpus.ts `classStatement`). */
export interface SourceLocation {
  repo: string;
  module: string;
  className: string;
  /** repository-relative path of the module's file */
  path: string;
  /** 1-based line of the class statement */
  line: number;
}

/** A PEP 508 requirement of one extern import of the block. */
export interface BlockRequirement {
  /** top-level import name (`yaml`) */
  importName: string;
  /** `PyYAML==6.0.1`; null for the standard library or when unknown */
  pep508: string | null;
}

export interface BlockRecord {
  /** record layout version (BLOCK_RECORD_VERSION) */
  version: number;
  /** block id: `module.Class`, or `owner/name:module.Class` where two repositories define it */
  id: string;
  /** repository of the block's class; null when the id names no indexed class */
  repository: string | null;
  source: SourceLocation | null;
  /** the class as extraction read it: bases, docstring, `__init__` / `forward` parameters
   *  (inherited from an indexed base where the class has none); specs, search documents
   *  and the catalog are projections of it */
  signature: ClassSignature | null;
  /** the module file written (`<library>/extracted|blocks|failed/<id>.py`); '' when none */
  file: string;
  /** extraction without unresolved names; after validation: the required stages passed */
  ok: boolean;
  /** emitted lines */
  lines: number;
  diagnostics: Diagnostic[];
  /** interned module names whose statements were copied */
  interned: string[];
  /** extern modules imported (each a requirement) */
  externs: string[];
  /** module-level edges of the copied code, from the closure at extraction: which module
   *  reads which interned module's definitions, which extern packages each imports (the
   *  catalog's dependency graph draws them). Absent in records stored before it was
   *  recorded, and when nothing was emitted */
  moduleGraph?: ModuleGraph;
  /** every copied statement's repository, revision, path, line ranges and SWHID */
  provenance: ProvenanceEntry[];
  /** original name → emitted name, for renamed bindings */
  renames: { from: string; to: string; module: string }[];
  emission: EmissionFacts;
  /** milliseconds of the extraction */
  ms: number;
  /** why nothing was emitted */
  error?: string;
  /** the sandboxed validation's result, when the block was validated: the one of an
   *  environment it passed in when there is one (the latest run's when that passed),
   *  else the latest run's */
  validation?: ValidationRecord;
  /** the validation of this module in each environment it ran in, by environment id
   *  (record version 2; a version-1 record's `validation` is its only entry): a run in
   *  another environment adds an entry, a run in the same one replaces its entry */
  validations?: Record<string, EnvValidation>;
  /** PEP 508 requirements of the externs (the library stage resolves them) */
  requirements?: BlockRequirement[];
  /** what the validated result was computed from (pipeline/reuse.ts): a re-run whose
   *  inputs are the same reads this record instead of emitting and validating again */
  inputs?: BlockInputs;
  /** of the run that wrote or read this record: whether the stored result was reused, and why */
  reuse?: { reused: boolean; why: string };
}

/** Digests of what a block's validated result depends on (pipeline/reuse.ts). */
export interface BlockInputs {
  /** nnrag's code (compiled modules and the validation harness) */
  code: string;
  /** validation environment id */
  env: string;
  /** the pipeline's options (profile, required stages, equivalence, intern/extern, importable) */
  options: string;
  /** every repository's name, root and module paths */
  layout: string;
  /** call sites, data sites, the class's own witnesses */
  request: string;
  /** its parts apart, to say which changed: call and data sites; the class's own witnesses */
  sites?: string;
  witnesses?: string;
  /** the providers (witnesses of other classes), only when a parameter of the class could
   *  take one (pipeline/reuse.ts) */
  providers?: string;
  /** `[repo, path, blob]` of every file the closure read */
  files: [string, string, string][];
}

/** One environment's validation of a block: the record plus whether it passed the
 *  required stages there and the environment's short label. */
export type EnvValidation = ValidationRecord & { ok: boolean; label: string };

/** The short human label of a validation's environment: its recorded label, else the
 *  interpreter that ran (records before environment facts), else the id's start. */
export function environmentLabel(v: Pick<ValidationRecord, 'environment' | 'python' | 'envId'>): string {
  return v.environment?.label ?? (v.python ? v.python : `environment ${v.envId.slice(0, 8)}`);
}

/** Whether `query` names this environment: its id (or a prefix of at least 4 characters
 *  of it), or its label, whole or a part of it (case-insensitive). */
export function matchesEnvironment(env: { id: string; label: string }, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return false;
  if (env.id === query || (q.length >= 4 && env.id.startsWith(q))) return true;
  return env.label.toLowerCase().includes(q);
}

/** The per-environment validations of a record (a record without the map: its one
 *  `validation`, whose pass is the record's `ok`). */
export function validationsOf(
  record: Pick<BlockRecord, 'validation' | 'validations' | 'ok'>,
): Record<string, EnvValidation> {
  if (record.validations) return record.validations;
  const v = record.validation;
  return v ? { [v.envId]: { ...v, ok: record.ok, label: environmentLabel(v) } } : {};
}

/** Whether two validations ran in the same environment, though their ids differ: the
 *  id also digests nnrag's harness (a newer nnrag validates again), so the same
 *  interpreter, root filesystem, virtual environment and lock (a lock alone, for a PyPI
 *  environment nnrag made: wherever it lies, it is that lock), with the same Python and
 *  torch, and no distribution the two imported at different versions, is one environment,
 *  whose newer result replaces the older. The distributions are the block's own (those its
 *  validation imported, pool.ts factsForBlock): a newer validation that imports one more
 *  (a usage line naming an installed package's class) ran in the same environment. Records
 *  without the facts are never the same. */
export function sameEnvironment(
  a: EnvironmentFacts | null | undefined,
  b: EnvironmentFacts | null | undefined,
): boolean {
  if (!a || !b) return false;
  // a PyPI environment nnrag made is its lock wherever it lies (its facts name no folder
  // since issue 28; an older record of it still names its folder)
  const byLock = a.lock && b.lock && !a.rootfs && !b.rootfs;
  return (
    (byLock || (a.interpreter === b.interpreter && a.rootfs === b.rootfs && a.venv === b.venv)) &&
    a.lock === b.lock &&
    a.python === b.python &&
    a.torch === b.torch &&
    sameVersions(a.distributions ?? [], b.distributions ?? [])
  );
}

/** No distribution named in both lists (`name==version`, names compared as PEP 503
 *  normalises them) at different versions. */
function sameVersions(a: readonly string[], b: readonly string[]): boolean {
  const split = (d: string) => [normalizeDistName(d.split('==')[0]), d.slice(d.indexOf('==') + 2)] as const;
  const versions = new Map(a.map(split));
  return b.map(split).every(([name, v]) => !versions.has(name) || versions.get(name) === v);
}

/**
 * A new validation of the same module added to the earlier ones (`previous`, those of
 * the same module text): its environment's entry is replaced (by id, or an older
 * nnrag's result in the same environment: sameEnvironment), the others kept. The block
 * passes when it passed in any environment; the validation shown is the new one when it
 * passed, else one that passed (the most recently added), else the new one.
 */
export function addValidation(
  previous: Record<string, EnvValidation>,
  v: ValidationRecord,
  ok: boolean,
): { validations: Record<string, EnvValidation>; validation: ValidationRecord; ok: boolean } {
  const validations: Record<string, EnvValidation> = { ...previous };
  for (const [id, x] of Object.entries(validations))
    if (id === v.envId || sameEnvironment(x.environment, v.environment)) delete validations[id];
  validations[v.envId] = { ...v, ok, label: environmentLabel(v) };
  if (ok) return { validations, validation: v, ok };
  const passed = Object.values(validations).filter((x) => x.ok);
  if (!passed.length) return { validations, validation: v, ok: false };
  const { ok: _ok, label: _label, ...shown } = passed[passed.length - 1];
  return { validations, validation: shown, ok: true };
}

/** The stored status of a block, which decides its folder (library/layout.ts). */
export type BlockStatus = 'validated' | 'failed' | 'extracted';

export const BLOCK_STATUSES: readonly BlockStatus[] = ['validated', 'failed', 'extracted'];

/** A record for a block whose extraction produced nothing (yet). */
export function emptyRecord(
  id: string,
  repository: string | null = null,
  source: SourceLocation | null = null,
): BlockRecord {
  return {
    version: BLOCK_RECORD_VERSION,
    id,
    repository,
    source,
    signature: null,
    file: '',
    ok: false,
    lines: 0,
    diagnostics: [],
    interned: [],
    externs: [],
    provenance: [],
    renames: [],
    emission: { profile: 'faithful' },
    ms: 0,
  };
}
