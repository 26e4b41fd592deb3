// The JSON schema of the block record (records/block.ts `BlockRecord`), for users of
// `--json` and of the records the store keeps. docs/block-record.schema.json is this object
// written out by scripts/block-record-schema.ts; test/library/record.test.ts checks that
// the file is current, that every record field is described (the key list below is checked
// against the type by the compiler) and that real extraction records satisfy it.
import type { BlockRecord } from '../records/block.js';

const str = { type: 'string' } as const;
const strs = { type: 'array', items: str } as const;
const int = { type: 'integer', minimum: 0 } as const;
const nullable = (t: string) => ({ type: [t, 'null'] });
const shapes = { type: ['array', 'null'], items: { type: 'array', items: { type: 'integer' } } } as const;
const stageStatus = { enum: ['pass', 'fail', 'skip'] } as const;
const params = {
  type: 'array',
  items: {
    type: 'object',
    required: ['name', 'default', 'annotation', 'kind'],
    properties: {
      name: str,
      default: nullable('string'),
      annotation: nullable('string'),
      kind: { enum: ['positional', 'keyword', 'var-positional', 'var-keyword'] },
    },
  },
} as const;

/** Every field of BlockRecord, each with its schema. `satisfies` makes a field added to the
 *  type without a schema (or a schema entry without a field) a compile error. */
const environment = {
  type: 'object',
  description: 'the environment that ran: its probe and workers',
  required: ['id', 'label', 'python', 'torch'],
  properties: {
    id: str,
    label: {
      ...str,
      description:
        'short human name: `PyPI environment, lock <lock> (python X, torch Y)` for a PyPI environment nnrag made (named by its lock, not its folder), else its root filesystem, virtual environment or interpreter with the versions',
    },
    python: { ...str, description: 'Python version' },
    torch: { ...str, description: 'torch version as imported' },
    rootfs: str,
    interpreter: {
      ...str,
      description: 'the interpreter as invoked; absent for a PyPI environment nnrag made (its lock names it)',
    },
    venv: { ...str, description: 'sys.prefix of a virtual environment; absent for a PyPI environment nnrag made' },
    lock: { ...str, description: 'digest of the lock of a PyPI environment nnrag made' },
    distributions: {
      type: 'array',
      items: str,
      description: 'name==version of the distributions the block imports, torch included',
    },
    unpinned: {
      type: 'array',
      items: str,
      description: 'imports no installed distribution provides by name (required unversioned)',
    },
  },
};

const validation = {
  type: 'object',
  description: 'the sandboxed validation',
  required: ['stages', 'category', 'error', 'args', 'input_shapes', 'output_shapes', 'params', 'envId'],
  properties: {
    stages: {
      type: 'object',
      required: ['parse', 'compile', 'import', 'namespace', 'instantiate', 'forward', 'equivalence'],
      properties: Object.fromEntries(
        ['parse', 'compile', 'import', 'namespace', 'instantiate', 'forward', 'equivalence'].map((s) => [
          s,
          stageStatus,
        ]),
      ),
    },
    category: { ...nullable('string'), description: 'failure category (syntax, missing-extern, needs-args, …)' },
    error: nullable('string'),
    args: {
      type: ['object', 'null'],
      description:
        "constructor arguments used; a path under a known folder is named by place (`<owner/name>/models/x.yaml`: that repository's checkout; `<store>`, `<nnrag-home>`)",
    },
    argumentsSource: {
      enum: ['user', 'witness', 'test', 'doctest', 'readme', 'example', 'call-site', 'config-table', 'guess'],
      description: 'where the arguments came from',
    },
    argumentsOrigin: {
      type: 'string',
      description: 'the test id, or file and line, of a witness from tests or documented examples',
    },
    input_shapes: shapes,
    output_shapes: shapes,
    params: nullable('integer'),
    layers: {
      type: 'object',
      additionalProperties: { type: 'integer' },
      description: 'module type → count in the built instance',
    },
    usage: {
      ...nullable('string'),
      description:
        "the construction and call that passed forward, as Python: `import` lines of a few standard modules and `from P import N` lines of public names of installed distributions the block's module imports (export pins them), then one expression, rendered from the recorded values; a path under a repository's checkout is written `<owner/name>/path` (replace `<owner/name>` by your checkout of that repository; export and the catalog show it with this machine's checkout)",
    },
    usageCheck: {
      enum: ['ran', 'values', 'seeded'],
      description:
        'how the usage was checked before it was recorded: run as written, or (when building the block again did not fit in the time left) its argument and input expressions evaluated and equal to the validated ones, or (seeded) run as written by a line that seeds the random generators its call draws from, because another draw fails with these values',
    },
    usageDraws: {
      ...str,
      description:
        'for a seeded usage line: how an unseeded random draw fails with the same values (why the line seeds the generators)',
    },
    usageSkipped: {
      ...str,
      description:
        'why a block whose forward passed has no usage line: the value without a plain spelling, the error of the line when it ran, or the usage roots refused (bound, not indexed)',
    },
    envId: { ...str, description: 'validation environment id' },
    python: {
      ...str,
      description:
        'the interpreter that validated, on the host, when its path identifies it (absent for a PyPI environment nnrag made: `environment.lock` names it)',
    },
    environment,
    torchRequired: {
      type: 'object',
      required: ['spec', 'file', 'line'],
      properties: { spec: str, file: str, line: int },
      description: "a torch-version failure: the repository's declared torch requirement",
    },
    equivalence: {
      type: 'object',
      required: ['status'],
      properties: {
        status: stageStatus,
        reason: str,
        maxAbsDiff: { type: 'number' },
        originalMs: {
          type: 'number',
          description: 'milliseconds importing and building the original (records written before issue 28 only)',
        },
      },
    },
    namespace: {
      type: 'object',
      required: ['status', 'checked'],
      properties: {
        status: stageStatus,
        reason: str,
        checked: int,
        skipped: int,
        mismatches: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'copy', 'original'],
            properties: { name: str, copy: str, original: str },
          },
        },
      },
    },
  },
};

const properties = {
  version: { ...int, description: 'record layout version (1)' },
  id: { ...str, description: 'block id: module.Class, or owner/name:module.Class where two repositories define it' },
  repository: { ...nullable('string'), description: "repository of the block's class" },
  source: {
    type: ['object', 'null'],
    description: "where the block's class is defined (the last top-level class statement of that name)",
    required: ['repo', 'module', 'className', 'path', 'line'],
    properties: { repo: str, module: str, className: str, path: str, line: int },
  },
  signature: {
    type: ['object', 'null'],
    description: 'the class as extraction read it (parameters inherited from an indexed base where the class has none)',
    required: ['bases', 'docstring', 'init', 'forward'],
    properties: { bases: strs, docstring: nullable('string'), init: params, forward: params },
  },
  file: { ...str, description: 'the module file written; empty when none' },
  ok: { type: 'boolean', description: 'no unresolved names; after validation: the required stages passed' },
  lines: { ...int, description: 'lines of the emitted module' },
  diagnostics: {
    type: 'array',
    description: 'names the closure could not resolve, eager cycles',
    items: {
      type: 'object',
      required: ['severity', 'name', 'reason', 'message', 'module', 'path', 'repo', 'line'],
      properties: {
        severity: { enum: ['error', 'warning'] },
        name: str,
        reason: str,
        message: str,
        module: str,
        path: str,
        repo: str,
        line: int,
      },
    },
  },
  interned: { ...strs, description: 'interned modules whose statements were copied' },
  externs: { ...strs, description: 'extern modules imported' },
  moduleGraph: {
    type: 'object',
    description:
      'module-level edges of the copied code, computed at extraction (absent in records stored before it was recorded)',
    required: ['interned', 'extern'],
    properties: {
      interned: {
        type: 'array',
        description: '[reader, definer]: copied statements of the first module read definitions of the second',
        items: { type: 'array', items: str, minItems: 2, maxItems: 2 },
      },
      extern: {
        type: 'array',
        description: '[reader, package]: copied statements of the module use an import of the extern top-level package',
        items: { type: 'array', items: str, minItems: 2, maxItems: 2 },
      },
    },
  },
  provenance: {
    type: 'array',
    description: 'per source file: repository, revision, path, module, SWHID and the line ranges copied',
    items: {
      type: 'object',
      required: ['repo', 'revision', 'url', 'path', 'module', 'swhid', 'ranges'],
      properties: {
        repo: str,
        revision: nullable('string'),
        url: nullable('string'),
        path: str,
        module: str,
        swhid: str,
        ranges: { type: 'array', items: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 } },
      },
    },
  },
  renames: {
    type: 'array',
    description: 'original name → emitted name, for renamed bindings',
    items: { type: 'object', required: ['from', 'to', 'module'], properties: { from: str, to: str, module: str } },
  },
  emission: {
    type: 'object',
    description: 'how the module was emitted',
    required: ['profile'],
    properties: {
      profile: { enum: ['slim', 'faithful'] },
      fallbackReason: str,
      faithfulLines: { type: 'integer', minimum: 0 },
      slimLines: { type: ['integer', 'null'], minimum: 0 },
      removed: {
        type: 'array',
        description: 'what slim left out: decorators, options, branches, with the original lines',
        items: {
          type: 'object',
          required: ['kind', 'repo', 'path', 'module', 'lines', 'what'],
          properties: {
            kind: { enum: ['decorator', 'registration', 'options', 'branch', 'unreached'] },
            repo: str,
            path: str,
            module: str,
            lines: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 },
            what: str,
          },
        },
      },
      proven: { type: 'array', items: str, description: 'decorators the sandbox proved to return their argument' },
      usageRoots: {
        type: 'array',
        items: str,
        description:
          "definitions (module.name) copied for the usage line only: the validated arguments name them, the block's code does not",
      },
      packages: {
        type: 'array',
        description:
          "installed distributions the slim module imports from instead of copying another repository's code (their files are the indexed ones); export pins each to this version",
        items: {
          type: 'object',
          required: ['distribution', 'version', 'repo', 'modules'],
          properties: { distribution: str, version: str, repo: str, modules: { type: 'array', items: str } },
        },
      },
    },
  },
  ms: { type: 'number', description: 'milliseconds of the extraction' },
  error: { ...str, description: 'why nothing was emitted' },
  validation: {
    ...validation,
    description: 'the sandboxed validation shown: one that passed when any did, else the latest',
  },
  validations: {
    type: 'object',
    description: 'one validation per environment id the module ran in (record version 2)',
    additionalProperties: {
      ...validation,
      required: [...validation.required, 'ok', 'label'],
      properties: {
        ...validation.properties,
        ok: { type: 'boolean', description: 'passed the required stages in this environment' },
        label: { ...str, description: "the environment's short label" },
      },
    },
  },
  requirements: {
    type: 'array',
    description: 'PEP 508 requirements of the externs',
    items: {
      type: 'object',
      required: ['importName', 'pep508'],
      properties: { importName: str, pep508: nullable('string') },
    },
  },
  inputs: {
    type: 'object',
    description: 'what the validated result was computed from: a re-run with the same inputs reuses the record',
    required: ['code', 'env', 'options', 'layout', 'request', 'files'],
    properties: {
      code: str,
      env: str,
      options: str,
      layout: str,
      request: str,
      sites: { type: 'string', description: 'the call and data sites of the request' },
      witnesses: { type: 'string', description: "the class's own witnesses in the request" },
      providers: {
        type: 'string',
        description: "the request's providers, present only when a parameter of the class could take one",
      },
      files: {
        type: 'array',
        description: '[repository, path, blob id] of every file the closure read',
        items: { type: 'array', items: str, minItems: 3, maxItems: 3 },
      },
    },
  },
  reuse: {
    type: 'object',
    description: 'whether the run that wrote or read the record reused the stored result, and why',
    required: ['reused', 'why'],
    properties: { reused: { type: 'boolean' }, why: str },
  },
} satisfies Record<keyof BlockRecord, object>;

// the other direction: no schema entry for a field the type does not have
type Exact<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : never;
const exact: Exact<typeof properties, BlockRecord> = true;
void exact;

/** Fields every record has (the optional ones of BlockRecord are left out). */
const REQUIRED: (keyof BlockRecord)[] = [
  'version',
  'id',
  'repository',
  'source',
  'signature',
  'file',
  'ok',
  'lines',
  'diagnostics',
  'interned',
  'externs',
  'provenance',
  'renames',
  'emission',
  'ms',
];

export const BLOCK_RECORD_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'nnrag block record',
  description:
    'One block as extraction produced it and validation completed it (the records of extract/validate --json, and the store).',
  type: 'object',
  required: REQUIRED,
  properties,
} as const;

/** The schema as written to docs/block-record.schema.json. */
export function blockRecordSchemaText(): string {
  return JSON.stringify(BLOCK_RECORD_SCHEMA, null, 2) + '\n';
}
