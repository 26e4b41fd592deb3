// Help text of the command line: one line per flag (what it does, the values it takes,
// its default) and one example per command. A flag means the same in every command unless
// a command says otherwise in COMMAND_FLAGS; a test checks that every flag of every
// command has a line and every command an example.
import type { Command } from './context.js';

const STAGES = 'parse, compile, import, instantiate, forward, equivalence';

/** What a flag means wherever it appears. */
export const FLAGS: Record<string, string> = {
  json: 'print machine-readable JSON on stdout (everything it prints is also in the store)',
  store: 'the store folder (default ./.nnrag, or $NNRAG_STORE)',
  help: 'show this help',
  repo: 'a repository: a local folder (indexed in place), a bare repository or a git URL (shallow sparse clone of *.py); repeatable',
  config: 'a repo_config.json (nn-rag\'s format: {"owner/name": {url|path, priority, paths, package_roots}})',
  block: 'a block to work on: qualified id (timm.layers.mlp.Mlp) or bare class name (Mlp); repeatable',
  blocks: 'several blocks, as --block',
  'names-json': 'a JSON file with a list of block names (- or /dev/stdin reads standard input)',
  all: 'every block of the store',
  limit: 'at most N blocks',
  'start-from': 'skip the selected blocks before this one (resume an interrupted run)',
  out: 'output folder (default <store>/library)',
  'no-validate': 'emit the standalone modules without validating them (stored validation of unchanged modules is kept)',
  profile:
    'slim (default when validating: without registration decorators and unreached options, kept only where it validates as faithful does) or faithful (every option of the original); export: faithful re-emits a slim block',
  intern:
    'module pattern to copy into the emitted module even when it could stay an import (fnmatch on dotted names: timm.layers.*, a.b.**); repeatable',
  extern: 'module pattern to keep as an import even when it is indexed (torch.package style); repeatable',
  python:
    'the interpreter that validates (default $NNRAG_PYTHON, else the environment scripts/setup.sh built, else the first python3 whose torch imports)',
  env: 'validate in a PyPI environment made by `nnrag env create DIR` (a repository with an environment of its own there validates in it)',
  rootfs: 'validate inside a root filesystem made by `nnrag env create DIR`',
  'no-sandbox': 'run repository code without bubblewrap (limits and timeouts only): only for code you trust',
  workers: 'number of validation workers (default: the number of cores; at most that many unless --force-workers)',
  'force-workers': 'allow --workers above the number of cores',
  timeout:
    'CPU seconds per block (default 20; a block that waits without computing is stopped after 6x that + 10 s of wall clock)',
  memory: 'memory limit per block in MB (default 2048)',
  require: `a stage that must pass for a block to be promoted (${STAGES}); repeatable; default import, instantiate, forward`,
  'no-equivalence': 'do not compare with the original module',
  force: 'validate again even when a stored result for the same module and environment exists',
  mode: 'missing (parse new and changed files, default) | force (parse everything again) | skip (no parsing, only the file list)',
  update: 'fetch remote repositories again before indexing',
  symbols:
    'only blocks whose id or name matches this pattern (fnmatch, case-insensitive: *Attention, timm.layers.*); repeatable',
  repos: 'only blocks of these repositories (owner/name); repeatable',
  near: 'Jaccard similarity from which two blocks are near-duplicates (default 0.85)',
  structural:
    'similarity of structure (names and literals abstracted) from which two blocks are structural duplicates (default 0.9)',
  threads: 'worker threads for de-duplication (default: the number of cores)',
  'top-up': 'add up to N blocks that are least similar to the rest (diversity)',
  html: 'also write the report as an HTML file',
  'no-dedup': 'leave out the uniqueness figures',
  category: `only blocks of this category (attention, convolution, transformer block, pooling, normalization, loss, architecture, utility); repeatable`,
  validated: 'only blocks that passed validation',
  'min-params': 'only blocks with at least N parameters',
  'max-params': 'only blocks with at most N parameters',
  into: 'the project folder to write into',
  module: 'dotted module name inside the project (default: the class name in snake case: ViT → vit)',
  'allow-failed': 'export a block that failed validation (refused otherwise)',
  port: 'TCP port (default 8765; 0 picks a free one)',
  packages: 'more Debian packages to install into the root filesystem (python3-einops,python3-timm); repeatable',
  wheels: 'a folder of wheels for what Debian does not package, installed with pip --no-index (nothing downloaded)',
  redis: 'the Redis server of the queue: redis://[user:password@]HOST:PORT[/DB] (default $NNRAG_REDIS)',
  queue: "the queue's name (default nnrag)",
  attempts: 'tries of a job before it ends failed (default 3)',
  backoff: 'seconds before the first retry of a failed job, doubled each retry (default 10)',
  shards: 'the folder of the shard stores (one per repository: <shards>/<owner%2Fname>)',
  cache: 'the repository cache of this machine, shared by its workers (default <shards>/.repos)',
  concurrency: 'jobs this worker runs at once (default 1)',
  'lock-duration': 'seconds a job stays locked without renewal before it counts as stalled (default 30)',
  'stalled-interval': 'seconds between checks for stalled jobs (default 30)',
  'exit-when-drained': 'stop when no job is waiting, delayed or active (default: run until SIGINT/SIGTERM)',
  host: 'loopback address to listen on (127.0.0.1 or ::1; other addresses are refused)',
  args: 'constructor arguments to try first, as JSON ({"dim": 64}, [64, 4] or {"args": [...], "kwargs": {...}}) or @FILE; for named blocks',
  'input-shape':
    'a forward input to try first: its shape (1,3,224,224, a float32 tensor), or @FILE with a JSON list of shapes or encoded tensors; repeat for more positional inputs',
};

/** `--env` of report and search: a filter on the environments blocks were validated in. */
const ENV_FILTER =
  'only what passed in this validation environment: its id (or 4+ leading characters of it) or part of its label (`torch 2.6`, an environment or --rootfs folder)';

/** Where a flag means something else in one command. */
export const COMMAND_FLAGS: Record<string, Record<string, string>> = {
  witnesses: {
    show: 'print the stored harvest without building anything',
    force: 'harvest again even when nothing changed since the stored harvest',
  },
  env: {
    store: "install what this store's repositories and blocks need (given explicitly or as $NNRAG_STORE)",
    python:
      "PyPI: the base interpreter of the virtual environments (default /usr/bin/python3); --debian: the interpreter whose installed distributions name the store's imports",
    packages:
      'PyPI: more requirements to install (PEP 508: torchvision, einops>=0.7); --debian: more Debian packages (python3-einops); repeatable',
    wheels:
      'a folder of wheels: PyPI, searched before the index (--find-links); --debian, installed with pip --no-index',
    debian:
      'build a Debian trixie root filesystem (python3-torch from Debian) instead of a PyPI virtual environment: for machines without PyPI',
    torch: 'the torch release to install (2.6, 2.6.0 or a specifier; default the newest stable)',
    'system-torch': "reuse the base interpreter's torch (and its other packages) instead of installing one from PyPI",
    offline: "install only from uv's cache and --wheels (nothing downloaded)",
    'no-native': "do not build the indexed repositories' compiled operators",
    'as-of':
      "resolve as of this date (2024-11-01 or an RFC 3339 time) instead of each repository's revision date plus 30 days (the default); torch, torchvision and --packages are never dated",
    'no-as-of': 'resolve the newest releases, whatever the revisions of the repositories',
    'no-reuse':
      "decide everything afresh: do not reuse what earlier environments on this machine decided for the same input (fallbacks, groups, bounds learnt at import, the import probe's findings), e.g. after the index changed",
  },
  index: { workers: 'parser threads (default: the number of cores; at most that many unless --force-workers)' },
  search: {
    all: 'include blocks that failed validation (left out by default; with --env: those that failed there)',
    limit: 'number of results (default 20)',
    env: ENV_FILTER,
  },
  report: { env: ENV_FILTER },
  similar: { limit: 'number of similar blocks (default 10)' },
  export: {
    force: 'replace an existing file of the same name',
    python:
      'interpreter whose installed versions pin the requirements (default: the recorded versions of the environments the block passed in)',
  },
  'export-pairs': {
    out: 'the JSON Lines file to write',
    all: 'also blocks that failed validation',
    python: 'interpreter whose installed versions pin the requirements',
  },
  library: { python: 'interpreter whose installed versions pin the requirements (default /usr/bin/python3)' },
  requirements: { python: 'interpreter that says which distribution provides an import (default /usr/bin/python3)' },
  merge: {
    into: 'the store the shards are merged into (created if needed)',
    out: 'library folder of the merged store (default <store>/library)',
  },
  worker: { workers: 'validation workers of each job (default: the number of cores)' },
  demo: { out: 'output folder of the library (default <store>/library)' },
};

/** One example per command. */
export const EXAMPLES: Record<string, string> = {
  index: 'nnrag index --repo ../pytorch-image-models --repo https://github.com/facebookresearch/detr.git',
  discover: "nnrag discover --symbols '*Attention' --json",
  stats: 'nnrag stats',
  extract: 'nnrag extract --repo ../nanoGPT --block GPT --out ./blocks',
  validate: 'nnrag validate timm.layers.mlp.Mlp --force --require equivalence',
  doctor: "nnrag doctor --store .nnrag   # also: what the store's repositories need that the environment lacks",
  env: 'nnrag env create /var/lib/nnrag/envs/mm --store .nnrag   # later: nnrag env sync /var/lib/nnrag/envs/mm --store .nnrag',
  demo: 'nnrag demo --store /tmp/nnrag-demo',
  library: 'nnrag library --python /usr/bin/python3',
  dedup: 'nnrag dedup --near 0.9',
  report: 'nnrag report --html report.html',
  'export-pairs': 'nnrag export-pairs --out pairs.jsonl',
  requirements: 'nnrag requirements --repos WongKinYiu/yolov9 --json',
  search: 'nnrag search "window attention" --category attention --validated',
  similar: 'nnrag similar timm.layers.mlp.Mlp --limit 5',
  export: 'nnrag export WindowAttention --into ../my-project --module blocks.window_attention',
  serve: 'nnrag serve --port 8765',
  witnesses: 'nnrag witnesses --repo nanoGPT --json',
  queue: 'nnrag queue --config repo_config.json --redis redis://127.0.0.1:6379   # then: nnrag queue status --redis …',
  worker: 'nnrag worker --redis redis://queue-host:6379 --shards /srv/nnrag/shards --exit-when-drained',
  merge: 'nnrag merge /srv/nnrag/shards/* --into /srv/nnrag/library-store',
};

/** The description of one flag of one command, if there is one. */
export function flagHelp(command: string, flag: string): string | undefined {
  return COMMAND_FLAGS[command]?.[flag] ?? FLAGS[flag];
}

/** `nnrag COMMAND --help`. */
export function commandHelp(name: string, cmd: Command, common: Command['options']): string {
  const lines = [cmd.summary, `usage: ${cmd.usage}`, '', 'flags:'];
  const opts = { ...cmd.options, ...common };
  const width = Math.max(...Object.keys(opts).map((k) => k.length)) + 4;
  for (const [flag, o] of Object.entries(opts)) {
    const value = o.type === 'string' ? ' V' : '';
    lines.push(`  ${`--${flag}${value}`.padEnd(width + 2)} ${flagHelp(name, flag) ?? ''}`);
  }
  if (EXAMPLES[name]) lines.push('', 'example:', `  ${EXAMPLES[name]}`);
  return lines.join('\n');
}
