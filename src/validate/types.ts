// Public types of the validator (docs/ARCHITECTURE.md "Validation"): what a caller asks for one
// block, what comes back per stage, and the pool / environment options.
import type { NamespaceMap } from '../emit/emitter.js';
import type { Stage, ValidationRecord } from '../records/validation.js';

/** Stages a block must pass to be promoted unless the caller says otherwise. */
export const DEFAULT_REQUIRED_STAGES: readonly Stage[] = ['import', 'instantiate', 'forward'];

/** A call of the class found in the corpus: a literal argument-list text such as
 *  "(64, 128, stride=2)", or the call in its context — the text of the top-level
 *  statement holding it (from `module`) and the offset of the call's `(` in that text. */
export type CallSite = string | { module: string; text: string; offset: number };

/** A top-level assignment of a configuration table (`model_cfgs = dict(a=Cfg(...), ...)`):
 *  its entries are candidates for a constructor's configuration parameter. */
export interface DataSite {
  module: string;
  /** the name the statement binds */
  name: string;
  /** the statement's text */
  text: string;
}

export interface ValidationRequest {
  /** block id, e.g. 'timm.layers.mlp.Mlp' */
  id: string;
  /** the emitted standalone module text */
  source: string;
  /** class to instantiate inside it */
  className: string;
  /** calls of the class found in the corpus (see CallSite) */
  callSites?: CallSite[];
  /** module-level configuration tables of the block's module (see DataSite) */
  dataSites?: DataSite[];
  /** for equivalence: import `module` from these roots (bound read-only into the sandbox) */
  original?: { module: string; className: string; sysPath: string[] };
  /** without `original`: the repository roots of the block the request serves (a
   *  decorator probe of its faithful module); the pool runs it on a worker that binds
   *  them (read-only, never on the candidate's sys.path) instead of restarting one with
   *  none (issue 27: the probes restarted the workers twice each) */
  universe?: string[];
  /** for the namespace stage (needs `original`): the module's names that came from the
   *  original corpus, what they denote there, and where the copied statements sit */
  namespace?: NamespaceMap;
  /** the module's top-level names that came from the corpus, each with the original
   *  definitions it stands for (the namespace map's `names`, given with or without
   *  `original`): witness values and usage snippets name a definition by the copy's name
   *  for it, renamed when two of the same name met (issue 26) */
  copyNames?: NamespaceMap['names'];
  /** top-level packages of installed distributions the block's module imports (its
   *  extern imports and the original module's absolute imports, torch and the standard
   *  library left out; pool.ts installedImports): a usage line may import a public name
   *  from them (`from torchvision.models import ResNet`) when the module lacks a value's
   *  class, and export then pins that distribution (snippet.py installed_spelling) */
  usagePackages?: string[];
  /** what the repository's own model builds gave the class (witness/), smallest first:
   *  tried before call sites, configuration tables and guesses */
  witnesses?: Witness[];
  /** top-level module names of the witnesses' repository (their classes are resolved in
   *  the copy; other modules, such as torch, are imported) */
  witnessRepoTops?: string[];
  /** for a class without witnesses: one witness of each other witnessed class of the
   *  repository (class id → witness), from which a constructor parameter that takes a
   *  module with attributes is built (`nnrag_harness/source_provider.py`) */
  providers?: Record<string, Witness>;
  /** a witness-harvest step instead of a validation (witness/harvest.ts) */
  harvest?: Record<string, unknown>;
  /** default ['import','instantiate','forward'] */
  requiredStages?: Stage[];
  /** only choose the arguments (pipeline.ts, slim first): every stage up to forward runs
   *  as in a whole validation, then the usage line is not run and equivalence not built;
   *  the result names the definitions the line would lack (`usageNeeds`). When it would
   *  name some, the pipeline needs the whole validation anyway: the request goes on as
   *  the whole one (usage line, equivalence) in the same child, and its result says so
   *  (`whole`) and is the whole request's */
  argumentsOnly?: boolean;
  timeoutMs?: number;
}

/** The names the namespace stage compared, and those that denote something else. */
/** One recorded construction of a class (and its first call) in a model the repository
 *  built itself: values encoded by python/nnrag_harness/values.py. */
export interface Witness {
  args: unknown[];
  kwargs: Record<string, unknown>;
  inputs?: { args: unknown[]; kwargs: Record<string, unknown> };
  outputs?: number[][];
  /** parameters of the instance built */
  params: number;
  /** the entry point that built it */
  entry: string;
  /** the class whose recorded inputs these are, when not this one (a sibling with the same forward) */
  inputsFrom?: string;
}

/** What the validator returns for one block: the facts the block record keeps
 *  (`ValidationRecord`, src/records/validation.ts) and what only the run needs. */
export interface ValidationResult extends Omit<ValidationRecord, 'missing' | 'torchRequired'> {
  id: string;
  /** all required stages passed */
  ok: boolean;
  timings: Partial<Record<Stage, number>>;
  /** the first failing stage */
  stage: Stage | null;
  /** a harvest step's answer (harvest requests only) */
  harvest?: unknown;
  /** why witnesses of the class could not be rebuilt in the copy (at most three) */
  witnessSkipped?: string[];
  /** the constructor parameters the request's providers could fill (empty: none; absent:
   *  no providers were asked, or unknown); a block whose result no provider could touch is
   *  not validated again when only the providers changed (pipeline/reuse.ts) */
  providersWanted?: string[];
  /** the classes and functions the chosen arguments name that the module does not define
   *  (`[module, qualname]`, the original's names; snippet.py usage_needs): the pipeline
   *  adds them to the module's closure so that the usage line can build them */
  usageNeeds?: [string, string][];
  /** an `argumentsOnly` request whose chosen arguments named definitions the module lacks,
   *  which went on as the whole request (the result is that request's) */
  whole?: boolean;
  /** Python traceback of the failure, trimmed */
  traceback?: string;
  /** tail of what the candidate printed, when it ended abnormally */
  output?: string;
  /** wall-clock milliseconds of the whole check inside the worker (fork to report) */
  ms: number;
  /** wall-clock milliseconds of the repository zygote's import this request waited for
   *  (its first request, or the sibling module it imported for this one), not in `ms` */
  zygoteMs?: number;
  /** `zygoteMs` was the import of a sibling module into the zygote (zygote.py zygote_extend) */
  zygoteSibling?: boolean;
  /** wall-clock milliseconds of the usage line (rendered, run as written, its reseeded
   *  draws; stages.py `_usage_info`): from forward's end to equivalence's start, as the
   *  worker reads the child's reports; part of `ms` but of no stage's timing */
  usageMs?: number;
  /** CPU milliseconds of each stage and of the usage line, as the worker reads the child's
   *  CPU time from /proc when its reports arrive (to a clock tick, 10 ms): the cost
   *  table's CPU column */
  cpuTimings?: Partial<Record<Stage, number>>;
  usageCpuMs?: number;
  /** CPU milliseconds of the zygote's import `zygoteMs` counts (its process's, from its fork) */
  zygoteCpuMs?: number;
  /** the request's time outside its stages and usage line, in parts (worker.py
   *  `OutsideClock`): part -> [wall ms, CPU ms] (CPU of the worker thread and of the child
   *  where it runs). `fork`, `child start`, `child between stages`, `child exit`,
   *  `clean-up` are in `ms`; `scratch removal`, `sweep` and `zygote's worker` come after
   *  it, `huge pages` (the worker's heap collapsed, once) before it; `worker reading the
   *  child (CPU only)` has no wall time of its own */
  outside?: Record<string, [number, number]>;
  /** the usage line's run in parts (snippet.py run_snippet), wall and CPU milliseconds
   *  each as the child measures them, summed over the lines it tried: `build` (its
   *  import lines and the block built as the line writes it), `call` (its inputs, then
   *  the call), `draws` (the calls under other seeds of a block that draws random
   *  numbers, `n` of them). What a usage line costs beside its rendering. */
  usageParts?: Partial<Record<UsagePart, { ms: number; cpuMs: number; n: number }>>;
}

/** The parts of a usage line's run (ValidationResult.usageParts). */
export const USAGE_PARTS = ['build', 'call', 'draws'] as const;
export type UsagePart = (typeof USAGE_PARTS)[number];

export interface PoolOptions {
  /** interpreter (inside `rootfs` when given); else NNRAG_PYTHON, else the first python with torch */
  python?: string;
  /** default: number of cores */
  workers?: number;
  /** default true; false = --no-sandbox (limits and timeout only) */
  sandbox?: boolean;
  /** run the interpreter inside this root filesystem (see createRootfs) */
  rootfs?: string;
  /** a PyPI environment folder made by `nnrag env create` (its shared virtual environment's
   *  interpreter; the pipeline picks a repository's own group where it has one) */
  env?: string;
  /** address space a candidate may add on top of the worker (interpreter + torch); default 2048 */
  memoryMb?: number;
  /** RLIMIT_CPU of a candidate process (SIGXCPU, the hard stop); default 30, or the
   *  timeout + 10 s when that is more */
  cpuSeconds?: number;
  /** CPU time per candidate, ms (its process and what it forked; the harness adds a
   *  wall-clock backstop of 6x + 10 s for a candidate that waits); default 20000 */
  timeoutMs?: number;
  /** processes / threads a candidate may add; default 64 */
  maxProcs?: number;
  /** largest file a candidate may write, MB; default 64 */
  fileSizeMb?: number;
  /** writable tmpfs in the sandbox, MB, default 256: /dev/shm a quarter (at most 64), /tmp the rest */
  scratchMb?: number;
  /** repository roots bound read-only from the start (a request with other roots restarts its worker with those) */
  roots?: string[];
  /** called with warnings (e.g. running without a sandbox) */
  onWarning?: (message: string) => void;
}

export interface Limits {
  memoryMb: number;
  cpuSeconds: number;
  timeoutMs: number;
  maxProcs: number;
  fileSizeMb: number;
  scratchMb: number;
}

export interface DoctorReport {
  python: string | null;
  pythonVersion: string | null;
  torch: string | null;
  torchError?: string;
  /** how the interpreter was chosen */
  pythonSource: 'explicit' | 'env' | 'search' | 'rootfs' | null;
  rootfs: string | null;
  sandbox: {
    bwrap: string | null;
    version: string | null;
    working: boolean;
    /** the uid the sandbox runs as (65534 when nnrag runs as root) */
    uid: number | null;
    error?: string;
  };
  limits: Limits;
  envId: string | null;
  /** installed distributions (`name==version`) that the environment id covers */
  distributions?: string[];
  /** the interpreter's sys.path (without a root filesystem) */
  sysPath?: string[];
  /** with --rootfs: its installed Debian packages (`name=version`, part of the id) */
  debianPackages?: string[];
  /** with --rootfs: what `nnrag env create/sync --store` asked for and got (environment/debian.ts) */
  environment?: import('../environment/debian.js').EnvManifest | null;
  problems: string[];
}
