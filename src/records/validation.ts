// The validation record: what a sandboxed validation of one block found, as the block
// record keeps it (`BlockRecord.validation`, one per environment in `validations`), and
// the vocabulary it is written in (stages, their statuses, failure categories, where the
// constructor arguments came from, the environment that ran). The validator (src/validate)
// produces it (`toRecord`); the store, the library, search and export read it. It sits
// low (src/records/, below the store) so that none of them imports the validator for it.

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
  /** the class statement sits under a module-level `if` (or try / with) not taken in this
   *  environment, and the original module does not define the class either: the block
   *  does not exist here (`if IS_MLU_AVAILABLE: class …`) */
  | 'conditional-class'
  | 'not-equivalent'
  | 'rebound-name';

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
  /** milliseconds importing and building the original module (where it got that far): in
   *  a validation's result, for the cost table; a record does not keep it (toRecord) */
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

/** The facts of one validation environment, from its probe (`harness.py --probe`) and its
 *  workers (torch's and Python's versions as imported), with the lock digest of a PyPI
 *  environment nnrag made. */
export interface EnvironmentFacts {
  /** the environment id (environmentId): same id, same stored validation */
  id: string;
  /** short human name: a PyPI environment nnrag made by its lock (`PyPI environment, lock
   *  69d8322797eca1ee (python 3.11.2, torch 2.15.0)`: not its folder, so two machines
   *  record the same bytes, issue 28), else the root filesystem or virtual environment,
   *  else the interpreter, with Python's and torch's versions */
  label: string;
  /** Python version the workers ran (`3.13.5`) */
  python: string;
  /** torch.__version__ as imported by the workers (`2.9.1+cpu`) */
  torch: string;
  /** the root filesystem the interpreter ran in (`--rootfs`), if any */
  rootfs?: string;
  /** the interpreter as invoked (inside `rootfs` when given); absent for a PyPI environment
   *  nnrag made, which `lock` names wherever it lies */
  interpreter?: string;
  /** sys.prefix when it differs from base_prefix (a virtual environment, PEP 405); absent
   *  for a PyPI environment nnrag made */
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

/** A `missing-extern` failure said as a requirement (validate/missing.ts). */
export type MissingVerdict = 'lacks' | 'no-package' | 'version' | 'unknown';

export interface MissingRequirement {
  /** top-level import name */
  module: string;
  distribution: string;
  /** the Debian package that provides it (or the first name tried when none does) */
  debian: string;
  /** Debian's candidate version, null when no package of that name exists */
  candidate: string | null;
  /** the package is installed in the environment */
  installed: boolean;
  verdict: MissingVerdict;
}

/** The `"validation"` object of a block record: the validator's result without timings,
 *  traceback and output (validate/record.ts `toRecord`), its error capped. */
export interface ValidationRecord {
  stages: Record<Stage, StageStatus>;
  category: FailureCategory | string | null;
  error: string | null;
  /** constructor arguments used: {name: value}, or {args: [...], kwargs: {...}} when some
   *  were positional (values of classes as 'module.Qualname'); null when none was built.
   *  A path under a repository's checkout, the store or nnrag's home is named by place
   *  (`<owner/name>/models/x.yaml`, validate/places.ts), as in `usage` */
  args: { [name: string]: JsonValue } | null;
  /** where `args` came from, when the validator reports it */
  argumentsSource?: ArgumentsSource;
  /** the test id (`tests/test_x.py::test_y[2]`) or file and line (`README.md:40`) of a
   *  witness from tests or documented examples */
  argumentsOrigin?: string;
  input_shapes: number[][] | null;
  output_shapes: number[][] | null;
  params: number | null;
  /** module type → count in the instantiated block, for specs */
  layers?: Record<string, number>;
  /** the construction and call that passed forward, as Python source
   *  (`Block(dim=32, num_heads=4)(torch.randn(2, 16, 32))`, after `import` lines of a few
   *  standard modules, and `from P import N` lines of public names of installed
   *  distributions the block's module imports, when its values need them), rendered from the recorded values,
   *  checked with `ast` and run as written before it is recorded (snippet.py); null when a
   *  value has no plain spelling or the run failed */
  usage?: string | null;
  /** how the usage was checked: run as written (`ran`), or its argument and input
   *  expressions evaluated and equal to the validated values (`values`: building the block
   *  again did not fit in the time left; `seeded`: run as written, a line that seeds the
   *  random generators its call draws from, because another draw fails with these values,
   *  `usageDraws` says how) */
  usageCheck?: 'ran' | 'values' | 'seeded';
  /** for a seeded line (`usageCheck: 'seeded'`): the failure of an unseeded draw with the
   *  same values (snippet.py OtherDraw); export and the block page show it */
  usageDraws?: string;
  /** why a block whose forward passed has no usage line: the value without a plain
   *  spelling, the line's error when it ran, the usage roots refused by their bound or not
   *  indexed (snippet.py, pipeline.ts withUsageRoots); export and the block page show it */
  usageSkipped?: string;
  equivalence?: EquivalenceResult;
  namespace?: NamespaceResult;
  envId: string;
  /** the interpreter that validated, when it runs on the host (not inside a --rootfs) and
   *  its path is what identifies it (not a PyPI environment nnrag made: `environment.lock`
   *  names that one): exported requirements of a record without environment facts are
   *  pinned to what it has installed */
  python?: string;
  /** what the environment that ran was (its probe and workers): export pins and lists
   *  these, the library keeps one validation per environment id */
  environment?: EnvironmentFacts;
  /** a missing-extern failure as a requirement (missing.ts): module, distribution, Debian
   *  package, whether the environment could have it */
  missing?: MissingRequirement;
  /** a torch-version failure: the torch requirement the block's repository declares
   *  (its packaging files, environment/repo-requirements.ts), the version that has the API */
  torchRequired?: { spec: string; file: string; line: number };
}
