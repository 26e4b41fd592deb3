// Public types of the validator (docs/ARCHITECTURE.md "Validation"): what a caller asks for one
// block, what comes back per stage, and the pool / environment options.
import type { NamespaceMap } from '../emit/emitter.js';

/** The validation stages, in the order they run. */
export type Stage = 'parse' | 'compile' | 'import' | 'namespace' | 'instantiate' | 'forward' | 'equivalence';
export const STAGES: readonly Stage[] = [
  'parse',
  'compile',
  'import',
  'namespace',
  'instantiate',
  'forward',
  'equivalence',
];

/** Stages a block must pass to be promoted unless the caller says otherwise. */
export const DEFAULT_REQUIRED_STAGES: readonly Stage[] = ['import', 'instantiate', 'forward'];

export type StageStatus = 'pass' | 'fail' | 'skip';

/** Failure categories. `not-equivalent` is only ever set by the equivalence stage,
 *  `rebound-name` only by the namespace stage. */
export type FailureCategory =
  | 'syntax'
  | 'missing-extern'
  /** torch lacks an API the block uses (`module 'torch' has no attribute 'compiler'`):
   *  another torch version has it */
  | 'torch-version'
  | 'unresolved-name'
  | 'native-extension'
  | 'native-op-no-cpu'
  | 'needs-args'
  | 'forward-shape'
  | 'runtime-error'
  | 'timeout'
  | 'memory'
  | 'crash'
  | 'sandbox-denied'
  | 'needs-gpu'
  | 'not-equivalent'
  | 'rebound-name';

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
  /** for the namespace stage (needs `original`): the module's names that came from the
   *  original corpus, what they denote there, and where the copied statements sit */
  namespace?: NamespaceMap;
  /** what the repository's own model builds gave the class (witness/), smallest first:
   *  tried before call sites, configuration tables and guesses */
  witnesses?: Witness[];
  /** top-level module names of the witnesses' repository (their classes are resolved in
   *  the copy; other modules, such as torch, are imported) */
  witnessRepoTops?: string[];
  /** a witness-harvest step instead of a validation (witness/harvest.ts) */
  harvest?: Record<string, unknown>;
  /** default ['import','instantiate','forward'] */
  requiredStages?: Stage[];
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

export interface NamespaceResult {
  status: StageStatus;
  reason?: string;
  /** name × origin pairs compared */
  checked: number;
  /** pairs not compared: the origin module does not import, or neither binds the name */
  skipped?: number;
  mismatches?: { name: string; copy: string; original: string }[];
}

export interface EquivalenceResult {
  status: StageStatus;
  reason?: string;
  maxAbsDiff?: number;
  /** milliseconds importing and building the original module (where it got that far) */
  originalMs?: number;
}

/** Where the constructor arguments that were used came from: the user (`--args`,
 *  `--input-shape`), an observed call of the
 *  original (witness, issue 11), a call site in the corpus, an entry of a configuration
 *  table, or defaults and guesses from annotations (`user`: --args / --input-shape); a witness from the repository's own
 *  tests (`test`), a class docstring's `>>>` examples (`doctest`), a Markdown code block
 *  (`readme`) or an examples/ script (`example`) names that source. */
export type ArgumentsSource =
  | 'user'
  | 'witness'
  | 'test'
  | 'doctest'
  | 'readme'
  | 'example'
  | 'call-site'
  | 'config-table'
  | 'guess';

/** A value as JSON carries it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface ValidationResult {
  id: string;
  /** all required stages passed */
  ok: boolean;
  stages: Record<Stage, StageStatus>;
  timings: Partial<Record<Stage, number>>;
  category: FailureCategory | string | null;
  error: string | null;
  /** the first failing stage */
  stage: Stage | null;
  /** constructor arguments used: {name: value}, or {args: [...], kwargs: {...}} when some
   *  were positional (values of classes as 'module.Qualname'); null when none was built */
  args: { [name: string]: JsonValue } | null;
  /** where `args` came from, when the validator reports it */
  argumentsSource?: ArgumentsSource;
  /** the test id (`tests/test_x.py::test_y[2]`) or file and line (`README.md:40`) of a
   *  witness from tests or documented examples */
  argumentsOrigin?: string;
  /** a harvest step's answer (harvest requests only) */
  harvest?: unknown;
  /** why witnesses of the class could not be rebuilt in the copy (at most three) */
  witnessSkipped?: string[];
  input_shapes: number[][] | null;
  output_shapes: number[][] | null;
  params: number | null;
  /** module type → count in the instantiated block, for specs */
  layers?: Record<string, number>;
  /** the construction and call that passed forward, as Python source
   *  (`Block(dim=32, num_heads=4)(torch.randn(2, 16, 32))`, after `import` lines of a few
   *  standard modules when its values need them), rendered from the recorded values,
   *  checked with `ast` and run as written before it is recorded (snippet.py); null when a
   *  value has no plain spelling or the run failed */
  usage?: string | null;
  /** how the usage was checked: run as written (`ran`), or its argument and input
   *  expressions evaluated and equal to the validated values (`values`: building the block
   *  again did not fit in the time left) */
  usageCheck?: 'ran' | 'values';
  /** why no usage snippet was recorded (a value without a plain spelling, the snippet's error) */
  usageSkipped?: string;
  equivalence?: EquivalenceResult;
  namespace?: NamespaceResult;
  /** Python traceback of the failure, trimmed */
  traceback?: string;
  /** tail of what the candidate printed, when it ended abnormally */
  output?: string;
  /** wall-clock milliseconds of the whole check inside the worker (fork to report) */
  ms: number;
  envId: string;
  /** the interpreter that validated, when it runs on the host (not inside a --rootfs):
   *  exported requirements are pinned to what it has installed */
  python?: string;
  /** what the environment that ran was (its probe and workers): export pins and lists
   *  these, the library keeps one validation per environment id */
  environment?: EnvironmentFacts;
}

/** The facts of one validation environment, from its probe (`harness.py --probe`) and its
 *  workers (torch's and Python's versions as imported), with the lock digest of a PyPI
 *  environment nnrag made. */
export interface EnvironmentFacts {
  /** the environment id (environmentId): same id, same stored validation */
  id: string;
  /** short human name: the root filesystem or virtual environment, else the
   *  interpreter, with Python's and torch's versions (`python 3.13.5, torch 2.9.1`) */
  label: string;
  /** Python version the workers ran (`3.13.5`) */
  python: string;
  /** torch.__version__ as imported by the workers (`2.9.1+cpu`) */
  torch: string;
  /** the root filesystem the interpreter ran in (`--rootfs`), if any */
  rootfs?: string;
  /** the interpreter as invoked (inside `rootfs` when given) */
  interpreter?: string;
  /** sys.prefix when it differs from base_prefix (a virtual environment, PEP 405) */
  venv?: string;
  /** digest of the lock of a PyPI environment `nnrag env create` made (nnrag-lock.txt) */
  lock?: string;
  /** installed distributions (`name==version`, PEP 503 names) of the modules the block
   *  imports, torch included: what the block was tested with */
  distributions?: string[];
  /** top-level imports of the block that no installed distribution provides by name and
   *  that are not in the standard library (export requires them by name, unversioned) */
  unpinned?: string[];
}

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
  /** CPU seconds per candidate; default 30 */
  cpuSeconds?: number;
  /** wall-clock per candidate; default 20000 */
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
  /** with --rootfs: its installed Debian packages (`name=version`, part of the id) */
  debianPackages?: string[];
  /** with --rootfs: what `nnrag env create/sync --store` asked for and got (env-packages.ts) */
  environment?: import('./env-packages.js').EnvManifest | null;
  problems: string[];
}
