// The validating pipeline behind `nnrag extract` and `nnrag validate` (their command
// functions: commands/extract.ts; docs/ARCHITECTURE.md "Validation", "The path of one
// block"): each block's closure is
// computed and its module emitted (`extractText`), validated in the pool (import,
// instantiate, forward, and equivalence against the original when its repository
// imports), then written to `<out>/blocks/` when it passes the required stages, else to
// `<out>/failed/` with a JSON record of the failing stage, category and error; without
// validation to `<out>/extracted/` (`extractBlocks`). Results are cached by module
// content and validation environment, so re-validating an unchanged module is free, and
// a block whose inputs are all unchanged is not even emitted again (pipeline/reuse.ts).
import { envGroups, envPython, fromIndexRepos } from '../environment/pypi.js';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { emitModule, type NamespaceMap } from '../emit/emitter.js';
import { slimClosure, type SlimResult } from '../emit/slim/slim.js';
import { importedPackages, installedLookup } from '../emit/slim/packages.js';
import { submodulesFor } from '../emit/submodules.js';
import { initParser } from '../parse/parser.js';
import { InstalledFiles } from '../environment/installed.js';
import { blockFile, libraryDir, placeBlockFile, removeBlockFile, validatedStatus } from '../library/layout.js';
import { dedupSignatureRow } from '../library/dedup.js';
import { addValidation, emptyRecord, validationsOf, type BlockRecord, type EmissionProfile } from '../records/block.js';
import { KNOWN_DISTRIBUTIONS } from '../environment/names.js';
import { readDeclaredRequirements } from '../environment/repo-requirements.js';
import { classSignature } from '../resolve/classes.js';
import { ClosureBuilder, type BuildOptions, type RootDef } from '../resolve/closure.js';
import type { Workspace } from '../workspace.js';
import { parseBlockId } from '../discover/ids.js';
import { sysPathRoots } from '../store/store.js';
import { putCachedValidation, getCachedValidation, getExtraction, putExtraction, textHash } from '../store/records.js';
import { missingLookup } from '../validate/missing.js';
import type { Ref, StatementFacts } from '../parse/types.js';
import type { Corpus, CorpusModule } from '../resolve/corpus.js';
import { PROBE_CLASS, probeSource, probeVerdicts } from '../emit/slim/probe.js';
import { entryCallFromArgs, entryCallFromText, type EntryCall } from '../emit/slim/entry.js';
import {
  DEFAULT_REQUIRED_STAGES,
  ValidatorPool,
  environmentIdOf,
  environmentFactsOf,
  type ProbedEnvironment,
  type WorkerInfo,
  passesStages,
  toRecord,
  forStorage,
  validationKey,
  factsForBlock,
  installedImports,
  requestRoots,
  type ValidationRecord,
  type CallSite,
  type DataSite,
  type PoolOptions,
  type Stage,
  type UsagePart,
  type ValidationRequest,
  type ValidationResult,
  type Witness,
} from '../validate/index.js';
import {
  currentHarvest,
  fileListing,
  libraryModules,
  repoTops,
  repoWitnesses,
  witnessesOf,
  providersOf,
  type HarvestResult,
} from '../validate/witness/index.js';
import { KV_KEYS } from '../store/kv.js';
import { gitBlobId } from '../repos/git.js';
import { codeAtLines } from '../validate/witness/parts.js';
import { Costs } from '../util/costs.js';
import {
  Blobs,
  closureFiles,
  codeDigest,
  inputDigests,
  inputsChanged,
  keyedSysPath,
  layoutDigest,
  providersRelevant,
  rootsKeyed,
} from './reuse.js';
import { storeValuePlaces, type Places } from '../validate/places.js';
import { rememberedWorkers, startRemembering, storeEnvironment } from './environment.js';

export interface ExtractOptions {
  /** output folder for emitted modules (default `<store>/library`) */
  out?: string;
  intern?: string[];
  extern?: string[];
  /** top-level modules importable in the validation environment (its probe) */
  importable?: readonly string[];
  /** 'faithful' (the default here): every option of the original works; 'slim': without
   *  registration decorators and unreached options (src/emit/slim). The validating
   *  pipeline defaults to slim and keeps it only when it validates as the faithful
   *  module does (extractAndValidate, below); without validation nothing proves it */
  profile?: EmissionProfile;
  /** the validation environment's installed distributions (its sys.path): slim emission
   *  imports another repository's module from there when the installed file is the
   *  indexed one (emit/slim/packages.ts) */
  installed?: InstalledFiles;
  /** usage roots: definitions only the validated arguments name, added to the closure so
   *  that the usage line can build them (`usageRootsOf`) */
  roots?: BuildOptions['roots'];
}

export type { EmissionProfile };

/** What slim emission may use beyond the code: texts whose strings the block can be
 *  called with, decorators the sandbox proved to return their argument. */
export interface SlimInputs {
  seeds?: readonly string[];
  proven?: ReadonlySet<string>;
  /** calls of the block from outside (call sites, validated arguments; emit/slim/values.ts) */
  entry?: readonly EntryCall[];
}

export interface Extraction {
  record: BlockRecord;
  text: string;
  /** names of the emitted module and what they denote in the originals (for validation) */
  namespace?: NamespaceMap;
  /** slim emission: decorators not proven statically (for the sandbox probe) */
  unknownDecorators?: SlimResult['unknownDecorators'];
}

/** Compute the closure of one block and emit its standalone module (not written). */
export function extractText(ws: Workspace, id: string, opts: ExtractOptions = {}, slim: SlimInputs = {}): Extraction {
  const t0 = performance.now();
  const corpus = ws.corpus();
  const found = ws.blockModule(id);
  if (!found) {
    return {
      record: { ...emptyRecord(id), error: `${id} is not a class of an indexed module`, ms: performance.now() - t0 },
      text: '',
    };
  }
  const { mod, className, cls } = found;
  const base = { ...emptyRecord(id, mod.repo, ws.blockSource(id)), signature: classSignature(ws.resolver(), mod, cls) };
  try {
    const resolver = ws.resolver({ extern: opts.extern, intern: opts.intern, importable: opts.importable });
    const profile = opts.profile ?? 'faithful';
    const installed = opts.installed ? installedLookup(opts.installed) : undefined;
    const roots = opts.roots;
    const sl =
      profile === 'slim' ? slimClosure(ws.slimAnalysis(resolver), mod, className, { ...slim, installed, roots }) : null;
    const packages = sl ? importedPackages(sl.closure.packages) : [];
    const closure = sl ? sl.closure : new ClosureBuilder(corpus, resolver).build(mod, className, { roots });
    const usageRoots = closure.usageRoots.map((r) => `${r.mod.name}.${r.name}`);
    // the submodules its extern modules' attributes need (emit/submodules.ts): read from
    // the indexed sources and the validation environment's files
    const submodules = submodulesFor(corpus, mod.repo, opts.installed);
    const em = emitModule(corpus, closure, sl ? { edits: sl.edits, header: sl.header, submodules } : { submodules });
    const diagnostics = [...closure.diagnostics, ...em.diagnostics];
    const errors = diagnostics.filter((d) => d.severity === 'error');
    return {
      record: {
        ...base,
        ok: errors.length === 0,
        lines: em.lines,
        diagnostics,
        interned: em.interned,
        externs: em.externs,
        moduleGraph: em.moduleGraph,
        provenance: em.provenance,
        renames: em.renames,
        emission: {
          profile,
          ...(sl ? { removed: sl.removed } : {}),
          ...(packages.length ? { packages } : {}),
          ...(usageRoots.length ? { usageRoots } : {}),
        },
        ms: performance.now() - t0,
      },
      text: em.text,
      namespace: em.namespace,
      ...(sl ? { unknownDecorators: sl.unknownDecorators } : {}),
    };
  } catch (e) {
    return { record: { ...base, error: (e as Error).message, ms: performance.now() - t0 }, text: '' };
  }
}

/** Extract one block and write it under `<out>/extracted/` (no validation). */
export function extractBlock(ws: Workspace, id: string, opts: ExtractOptions = {}): BlockRecord {
  return extractBlocks(ws, [id], opts)[0];
}

/** Extract blocks and write them under `<out>/extracted/`, recording them in the store.
 *  A block whose emitted module is unchanged keeps its stored validation (and its file in
 *  `blocks/` or `failed/`): extraction without validation proves nothing new, so it must
 *  not demote what was validated. */
export function extractBlocks(
  ws: Workspace,
  ids: string[],
  opts: ExtractOptions = {},
  slimInputs?: (id: string, prev: BlockRecord) => SlimInputs,
): BlockRecord[] {
  const out = libraryDir(ws.storeDir, opts.out);
  return ids.map((id) => {
    // a validated slim module stays when the same slim module comes out again (no
    // profile asked for: the library's choice stands)
    const stored = opts.profile === undefined && slimInputs ? getExtraction(ws.store, id) : null;
    const slimHeld = stored && stored.status !== 'extracted' && stored.record.emission.profile === 'slim';
    // the usage roots a validation added stay (else the module would change and lose it)
    const held = stored && stored.status !== 'extracted' && !opts.roots ? storedRoots(ws, id, stored.record) : [];
    const o = held.length ? { ...opts, roots: held } : opts;
    const { record, text } = slimHeld
      ? extractText(ws, id, { ...o, profile: 'slim' }, slimInputs!(id, stored.record))
      : extractText(ws, id, o);
    const prev = text ? getExtraction(ws.store, id) : null;
    if (prev && prev.status !== 'extracted' && prev.hash === textHash(text)) {
      const file = blockFile(out, prev.status, id);
      if (existsSync(file)) return { ...prev.record, file, ms: record.ms };
    }
    if (text) {
      if (!placeOrReport(record, () => placeBlockFile(out, 'extracted', id, '.py', text))) return record;
      putExtraction(ws.store, {
        id,
        hash: textHash(text),
        ok: record.ok,
        status: 'extracted',
        lines: record.lines,
        record,
        text,
        // the de-duplication signature of the module, computed once here (dedup loads it)
        signature: dedupSignatureRow(text),
      });
    }
    return record;
  });
}

/** The usage roots of a stored record (`emission.usageRoots`, `module.name`) as
 *  definitions of the corpus (those still there). */
function storedRoots(ws: Workspace, id: string, record: BlockRecord): RootDef[] {
  const repo = ws.blockModule(id)?.mod.repo;
  const out: RootDef[] = [];
  for (const r of record.emission.usageRoots ?? []) {
    const dot = r.lastIndexOf('.');
    const mod = dot > 0 ? ws.corpus().module(r.slice(0, dot), repo) : undefined;
    if (mod) out.push({ mod, name: r.slice(dot + 1) });
  }
  return out;
}

/** The usage roots of a validation's `usageNeeds` (snippet.py usage_needs: the classes
 *  and functions the chosen arguments name that the module does not define, by the
 *  original's module and qualified name): each one's top-level definition in the indexed
 *  module of that name (as the block's repository imports it), when the module resolves
 *  the name to a definition; at most 8. A private name (`_Shift`, which `from module
 *  import *` leaves out, Language Reference §7.11) is a root too: the usage line imports
 *  it by name (export.ts usageImports); a dunder name is not (a snippet never names one). */
export function usageRootsOf(ws: Workspace, id: string, needs: readonly (readonly [string, string])[]): RootDef[] {
  const repo = ws.blockModule(id)?.mod.repo;
  if (!repo) return [];
  const resolver = ws.resolver();
  const out: RootDef[] = [];
  for (const [module, qualname] of needs) {
    const name = qualname.split('.')[0];
    if (!name || name.startsWith('__')) continue;
    const mod = ws.corpus().module(module, repo);
    if (!mod || out.some((r) => r.mod === mod && r.name === name)) continue;
    if (!resolver.resolveName(mod, name).some((t) => t.kind === 'def')) continue;
    out.push({ mod, name });
    if (out.length >= 8) break;
  }
  return out;
}

/** Write a block's library files (`place` returns the module's path) into its record;
 *  a file that cannot be written (a full disk, a name the file system refuses) is that
 *  block's failure, recorded as its error, never the end of the whole run. */
function placeOrReport(record: BlockRecord, place: () => string): boolean {
  try {
    record.file = place();
    return true;
  } catch (e) {
    record.file = '';
    record.ok = false;
    record.error = `cannot write the library file: ${(e as Error).message}`;
    return false;
  }
}

// ---------------------------------------------------------------- validation

export interface PipelineOptions extends ExtractOptions {
  /** validate (default true) */
  validate?: boolean;
  pool?: PoolOptions;
  /** an already started pool (not closed here) */
  validator?: ValidatorPool;
  required?: Stage[];
  /** compare with the original module when its repository imports (default true) */
  equivalence?: boolean;
  /** re-run validation even when a stored result for the same module and environment exists */
  force?: boolean;
  /** harvest witnesses from each repository's own model builds and try them first
   *  (default true; stored per repository, re-run only when its files change) */
  witnesses?: boolean;
  /** called once per repository harvest (ran or read from the store) */
  onHarvest?: (repo: string, result: HarvestResult, cached: boolean) => void;
  /** called when a repository's harvest is not in the store and starts (it may take
   *  minutes, before any block's line) */
  onHarvestStart?: (repo: string) => void;
  /** constructor arguments and forward inputs the user gave (validate/user-inputs.ts
   *  userWitness): tried first for every block validated */
  userInputs?: Witness;
  /** after each block, with its record */
  onProgress?: (done: number, total: number, record: BlockRecord) => void;
  onWarning?: (msg: string) => void;
  /** where the run's time goes (a new table when not given); stored with the run */
  costs?: Costs;
  /** the most lines usage roots may add to a module (default USAGE_ROOTS_MAX_LINES) */
  usageRootsMaxLines?: number;
  /** with the slim profile, validate the slim module first and the faithful one whole only
   *  where the choice needs it (default true; false: the faithful module's whole validation
   *  first, as before: the modules kept and their verdicts are the same, only the work
   *  differs, which is what a comparison of the two orders measures) */
  slimFirst?: boolean;
}

const MAX_CALL_SITES = 6;
/** a call's enclosing statement larger than this is not sent to the validator */
const MAX_CONTEXT_CHARS = 200_000;

/** Every reference of the corpus by the last name of its chain (`Mlp` for `layers.Mlp`),
 *  built once per corpus: finding the call sites of each block then looks at the
 *  references that can name it instead of scanning every reference again. */
type NamedRef = { mod: CorpusModule; ref: Ref; st: StatementFacts };
const refsByLastName = new WeakMap<Corpus, Map<string, NamedRef[]>>();

function refsNamed(corpus: Corpus, name: string): NamedRef[] {
  let index = refsByLastName.get(corpus);
  if (!index) {
    index = new Map();
    for (const mod of corpus.modules()) {
      for (const st of mod.facts.statements) {
        for (const ref of st.refs) {
          const last = ref.attrs?.length ? ref.attrs[ref.attrs.length - 1] : ref.name;
          const l = index.get(last);
          if (l) l.push({ mod, ref, st });
          else index.set(last, [{ mod, ref, st }]);
        }
      }
    }
    refsByLastName.set(corpus, index);
  }
  return index.get(name) ?? [];
}

/** Calls of the class found in the corpus, for the validator's constructor candidates:
 *  - literal argument lists, e.g. `(64, 128, stride=2)`, from references that resolve to
 *    the class and are directly followed by a call whose arguments are literals only;
 *  - otherwise the call in its context: the text of the enclosing top-level statement
 *    and the offset of the call's `(` in it. The harness parses it with Python's `ast`
 *    and evaluates the arguments with the reaching definitions of the enclosing function
 *    (parameter defaults, earlier local assignments, `self.x = …`, the first item of an
 *    enclosing `for`), so `InceptionB(288, conv_block=conv_block, **dd)` after
 *    `conv_block = partial(ConvNormAct, padding=0)` is built as the network builds it. */
export function callSites(ws: Workspace, id: string): CallSite[] {
  const corpus = ws.corpus();
  const resolver = ws.resolver();
  const block = ws.blockModule(id);
  if (!block) return [];
  const { mod: own, className: cls } = block;
  const literal = new Set<string>();
  const contextual: CallSite[] = [];
  for (const { mod, ref, st } of refsNamed(corpus, cls)) {
    if (literal.size >= MAX_CALL_SITES) break;
    const { targets, consumed } = resolver.resolveRef(mod, ref);
    if (consumed !== (ref.attrs?.length ?? 0)) continue;
    if (!targets.some((t) => t.kind === 'def' && t.module === own && t.name === cls)) continue;
    const src = safeSource(corpus, mod);
    if (src === null) continue;
    const end = consumed ? ref.attrEnds![consumed - 1] : ref.end;
    const args = literalCall(src, end);
    if (args) literal.add(args);
    else if (src[end] === '(' && contextual.length < MAX_CALL_SITES && st.end - st.start <= MAX_CONTEXT_CHARS) {
      contextual.push({ module: mod.name, text: src.slice(st.start, st.end), offset: end - st.start });
    }
  }
  return [...literal, ...contextual].slice(0, 2 * MAX_CALL_SITES);
}

/** Module-level configuration data of the block's own module, for constructors that take
 *  a configuration (`VGG(cfg)`, `RegNet(cfg: RegNetCfg)`): top-level assignments that bind
 *  one name spelled like a configuration table (`cfgs`, `model_cfgs`, `arch_configs`).
 *  The harness evaluates the entries of the table one by one as that argument. */
export function dataSites(ws: Workspace, id: string): DataSite[] {
  const corpus = ws.corpus();
  const mod = ws.blockModule(id)?.mod;
  if (!mod) return [];
  const src = safeSource(corpus, mod);
  if (src === null) return [];
  const out: DataSite[] = [];
  for (const st of mod.facts.statements) {
    if (st.kind !== 'expression_statement' || st.binds.length !== 1 || !CONFIG_TABLE.test(st.binds[0])) continue;
    if (st.end - st.start > MAX_CONTEXT_CHARS) continue;
    out.push({ module: mod.name, name: st.binds[0], text: src.slice(st.start, st.end) });
    if (out.length >= MAX_DATA_SITES) break;
  }
  return out;
}

const CONFIG_TABLE = /cfg|config/i;
const MAX_DATA_SITES = 4;
/** The parts of a request's time outside its stages (ValidationResult `outside`) that are
 *  not in its `ms`: the worker's removal of the scratch folder, the sweep of the sandbox,
 *  the zygote's worker's clean-up, after it; the heap's collapse into huge pages, before
 *  it (worker.py OutsideClock) */
const AFTER_MS_PARTS = new Set(['scratch removal', 'sweep', "zygote's worker", 'huge pages']);

function safeSource(corpus: Corpus, mod: CorpusModule): string | null {
  try {
    return corpus.source(mod);
  } catch {
    return null;
  }
}

const LITERAL_ARGS =
  /^\(\s*(?:(?:[A-Za-z_]\w*\s*=\s*)?(?:-?\d+(?:\.\d*)?(?:e-?\d+)?|True|False|None|'[^'\n]*'|"[^"\n]*"|\(\s*(?:-?\d+\s*,\s*)*-?\d*\s*\))\s*(?:,\s*|(?=\))))*\)$/;

/** The balanced `( … )` right after `pos` if it holds literal arguments only. */
function literalCall(src: string, pos: number): string | null {
  if (src[pos] !== '(') return null;
  let depth = 0;
  for (let i = pos; i < src.length && i < pos + 400; i++) {
    const c = src[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) {
      const text = src.slice(pos, i + 1).replace(/\s+/g, ' ');
      return LITERAL_ARGS.test(text) ? text : null;
    }
  }
  return null;
}

/** sys.path entries that make the block's original module importable: its own
 *  repository first, then, as installed packages after its own code (Language Reference
 *  §5.5, sys.path order), every other indexed repository that its closure copied
 *  definitions from (`crossed`) or that its module imports at top level (an absolute
 *  import whose top-level package another repository provides: Swin-Transformer's
 *  swin_mlp.py imports timm even where the block needs none of it). A repository in
 *  `installed` (a slim module imports it from its installed distribution, whose files are
 *  the indexed ones) is left out: the original then imports that same installed package,
 *  so the namespace stage can see the copy's imported names denote its very objects. */
function originalSysPath(
  ws: Workspace,
  id: string,
  crossed: readonly string[] = [],
  installed: ReadonlySet<string> = new Set(),
  env?: string,
): string[] | null {
  const mod = ws.blockModule(id)?.mod;
  if (!mod || !ws.store.getRepo(mod.repo)) return null;
  const corpus = ws.corpus();
  const repos = new Set([mod.repo, ...crossed]);
  for (const st of mod.facts.statements) {
    for (const e of st.imports) {
      if (e.kind === 'from' && e.level > 0) continue;
      const owner = corpus.module(e.module.split('.')[0], mod.repo)?.repo;
      if (owner) repos.add(owner);
    }
  }
  const out = new Set<string>();
  // a repository the environment installs from the index at another version than its
  // checkout (a pin of the block's repository excludes the checkout's) is imported from
  // there by the original, as by the repository's users
  const fromIndex = env ? fromIndexRepos(env) : new Set<string>();
  for (const name of repos) {
    if ((installed.has(name) || fromIndex.has(name)) && name !== mod.repo) continue;
    const repo = ws.store.getRepo(name);
    if (repo) for (const r of sysPathRoots(repo)) out.add(path.join(repo.root, ...r.split('/').filter(Boolean)));
  }
  return [...out];
}

/** The cost table's names of a usage line's parts (ValidationResult.usageParts). */
const USAGE_PART_LABEL: Record<UsagePart, string> = {
  build: 'build (its imports, the block built as written)',
  call: 'call (its inputs, then the block called)',
  draws: 'calls on other draws',
};

/** The most lines usage roots may add to a module (see withUsageRoots): a root that
 *  brings more (a test's model class with its framework's registry, config and logging
 *  machinery: mmengine's ToyModel added 12,397 lines to a 146-line block) leaves the
 *  block without a usage line rather than unreadable. The largest roots the reference
 *  corpus takes otherwise add about 530 lines (torchvision's RAFT). */
export const USAGE_ROOTS_MAX_LINES = 1000;

const lineCount = (text: string) => text.split('\n').length;

/** Usage roots (issue 26): the validation passed but the usage line could not be
 *  written, because the chosen arguments name definitions the module does not hold (its
 *  code never names them: torchvision's `norm_layer=FrozenBatchNorm2d`). The module is
 *  emitted again with those definitions as extra roots of its closure (`usageRootsOf`,
 *  only what that usage line needs) and validated again; it is kept when it passes
 *  every stage the first one passed and now has a usage line (the sandbox ran it, as
 *  for any snippet), else the first module stays. Nothing is tried when one of the names
 *  cannot become a root (private, not indexed). A second round adds what the new
 *  module's arguments still name, at most two rounds. */
async function withUsageRoots(
  ws: Workspace,
  id: string,
  opts: PipelineOptions,
  req: ValidationRequest,
  first: ValidationResult,
  validate: (req: ValidationRequest, label: string) => Promise<ValidationResult>,
  costs: Costs,
): Promise<{
  record: BlockRecord;
  text: string;
  result: ValidationResult;
  req: ValidationRequest;
  namespace: NamespaceMap | undefined;
  roots: RootDef[];
} | null> {
  const repo = ws.blockModule(id)?.mod.repo ?? '';
  let roots: RootDef[] = [];
  let needs = first.usageNeeds ?? [];
  for (let round = 0; round < 2 && needs.length; round++) {
    // every name the line uses must become a root, else the snippet still cannot be
    // written and a second validation would be wasted
    const wanted = new Set(needs.map(([m, q]) => `${m}\0${q.split('.')[0]}`));
    const found = usageRootsOf(ws, id, needs);
    // why the block keeps no usage line (the record's usageSkipped), before the error of
    // the round that found it
    const why = (reason: string) => {
      first.usageSkipped = `${reason}; ${first.usageSkipped ?? ''}`.replace(/; $/, '').slice(0, 300);
      return null;
    };
    if (found.length < wanted.size) {
      const lacking = needs
        .filter(([m, q]) => !found.some((r) => r.mod.name === m && r.name === q.split('.')[0]))
        .map(([m, q]) => `${m}.${q}`);
      return why(
        `${lacking.join(', ')}: not a definition of the indexed repositories nor a public name of an installed distribution the block's module imports`,
      );
    }
    const more = found.filter((r) => !roots.some((x) => x.mod === r.mod && x.name === r.name));
    if (!more.length) return null;
    roots = [...roots, ...more];
    const em = costs.time('emission faithful', repo, () =>
      extractText(ws, id, { ...opts, profile: 'faithful', roots }),
    );
    if (!em.text || em.text === req.source || !em.record.emission.usageRoots?.length) return null;
    // a usage example must not bury the block: roots that would add more than the bound
    // (a model class that brings its framework along) are not copied, and the result says
    // why the block has no usage line. Measured on the module kept: slim drops what the
    // block alone does not reach, so a root can cost far more lines there than in the
    // faithful module (which may already hold the root's framework for another reason)
    let added = lineCount(em.text) - lineCount(req.source);
    if ((opts.profile ?? 'slim') === 'slim') {
      const args = localValues(ws, first.args);
      const inputs = { seeds: slimSeeds(req, args), entry: slimEntry(req, args) };
      const slimOf = (r?: RootDef[]) =>
        costs.time('emission slim', repo, () => extractText(ws, id, { ...opts, profile: 'slim', roots: r }, inputs));
      const [without, withRoots] = [slimOf(undefined), slimOf(roots)];
      if (without.text && withRoots.text) added = Math.max(added, lineCount(withRoots.text) - lineCount(without.text));
    }
    const bound = opts.usageRootsMaxLines ?? USAGE_ROOTS_MAX_LINES;
    if (added > bound) {
      const names = roots.map((r) => r.name).join(', ');
      return why(`copying ${names} for the usage line would add ${added} lines (bound ${bound})`);
    }
    const rreq: ValidationRequest = { ...req, source: em.text, copyNames: em.namespace?.names };
    if (req.namespace && em.namespace) rreq.namespace = em.namespace;
    if (req.original) {
      // the roots may come from another repository: the original imports it too
      const crossed = [...new Set(em.record.provenance.map((p) => p.repo))];
      const sysPath = originalSysPath(ws, id, crossed, undefined, opts.pool?.env);
      if (sysPath) rreq.original = { ...req.original, sysPath };
    }
    const r = await validate(rreq, 'faithful with usage roots');
    const lost = (Object.keys(first.stages) as Stage[]).filter(
      (s) => first.stages[s] === 'pass' && r.stages[s] !== 'pass',
    );
    const names = roots.map((r) => r.name).join(', ');
    if (lost.length)
      return why(
        `with the usage roots ${names}, ${lost.map((s) => `${s} ${r.stages[s] ?? 'did not run'}`).join(', ')}${r.category ? ` (${r.category}: ${(r.error ?? '').slice(0, 120)})` : ''}`,
      );
    if (r.usage) return { record: em.record, text: em.text, result: r, req: rreq, namespace: em.namespace, roots };
    needs = r.usageNeeds ?? [];
    if (!needs.length || round === 1) return why(`with the usage roots ${names}: ${r.usageSkipped ?? 'no usage line'}`);
  }
  return null;
}

/** The slim module when it passes every stage the faithful one passes (same call sites,
 *  data sites and original, so equivalence too), else the faithful one with the reason
 *  on its record (`emission.fallbackReason`). Decorators the corpus does not show to
 *  return their argument are first tried in the sandbox (emit/slim/probe.ts).
 *
 *  `faithful` is the faithful module's whole validation, or (slim first) its
 *  arguments-only validation: the stages up to forward and the chosen arguments, as the
 *  whole validation has them. The whole one (`whole`) is then run only where the choice
 *  needs it: the faithful module is kept (a fallback, or slim is the faithful text), or
 *  the slim module's verdict does not settle the choice by itself, because it did not
 *  pass equivalence (which the faithful module may pass) or a required stage. */
async function slimOrFaithful(
  ws: Workspace,
  id: string,
  opts: PipelineOptions,
  req: ValidationRequest,
  { record: faithfulRecord, result: known }: { record: BlockRecord; result: ValidationResult },
  namespace: NamespaceMap | undefined,
  validate: (req: ValidationRequest, label: string) => Promise<ValidationResult>,
  costs: Costs,
  probes: Map<string, Promise<boolean | undefined>>,
  whole?: () => Promise<ValidationResult>,
): Promise<{ record: BlockRecord; text: string; result: ValidationResult }> {
  let faithful = known;
  let wholeRun: Promise<ValidationResult> | undefined;
  // (why it ran, counted for the cost table: what slim first could not spare)
  const wholeFaithful = async (why: string) => {
    if (whole && !wholeRun) costs.count(`validate faithful whole after arguments: ${why}`, repo);
    if (whole) faithful = await (wholeRun ??= whole());
    return faithful;
  };
  const args = localValues(ws, faithful.args);
  const seeds = slimSeeds(req, args);
  const entry = slimEntry(req, args);
  const repo = faithfulRecord.repository ?? '';
  let proven: string[] = [];
  let slim = costs.time('emission slim', repo, () =>
    extractText(ws, id, { ...opts, profile: 'slim' }, { seeds, entry }),
  );
  const usageRoots = faithfulRecord.emission.usageRoots;
  const fallback = async (reason: string) => {
    faithfulRecord.emission = {
      profile: 'faithful',
      fallbackReason: reason,
      faithfulLines: faithfulRecord.lines,
      slimLines: slim.record.lines || null,
      ...(usageRoots ? { usageRoots } : {}),
    };
    return { record: faithfulRecord, text: req.source, result: await wholeFaithful(reason.split(/[:(]/)[0].trim()) };
  };
  if (!slim.text) return fallback(`slim emission failed: ${slim.record.error ?? 'no text'}`);
  // decorators not proven statically: the sandbox applies them to a fresh class
  if (slim.unknownDecorators?.length && namespace && faithful.stages.import === 'pass') {
    // A probe applies each decorator expression to a fresh class or function, so its
    // verdict is the decorator's, whichever block's module it runs after: a decorator
    // site (repository, module, line, text) probed once in this run, with the same roots,
    // is not probed again (a block whose probe is running waits for it). A probe passes
    // when every decorator in it returns its argument: those already proven are left out
    // of it, and one already refused refuses it.
    const roots = req.original?.sysPath?.join('\0') ?? '';
    const sites = slim.unknownDecorators.map((d) => ({ d, k: `${roots}\n${d.key}\n${d.text}` }));
    const earlier = await Promise.all(sites.map(({ k }) => probes.get(k)));
    const refused = earlier.includes(false);
    const known = sites.filter((_, i) => earlier[i] === true).map(({ d }) => d.key);
    const todo = sites.filter((_, i) => earlier[i] === undefined);
    const probe =
      refused || !todo.length
        ? null
        : probeSource(
            req.source,
            namespace,
            todo.map(({ d }) => ({ key: d.key, module: d.mod.name, line: d.line, target: d.target })),
          );
    let passed = !refused && known.length > 0;
    if (probe) {
      const run = validate(
        {
          id: `${id}#decorator-probe`,
          source: probe.source,
          className: PROBE_CLASS,
          requiredStages: ['import'],
          // on the block's own workers (its roots bound, not imported): no restart
          ...(req.original ? { universe: req.original.sysPath } : {}),
        },
        'decorator probe',
      );
      const probed = todo.filter(({ d }) => probe.keys.includes(d.key));
      // a failed probe says which decorators refused (probeVerdicts); one that failed
      // otherwise decides only a probe of one decorator
      const verdicts = run
        .then((r) => {
          if (r.stages.import === 'pass') return probe.keys.map(() => true);
          return (
            probeVerdicts(r.error, probe.keys.length) ??
            probe.keys.map(() => (probe.keys.length === 1 ? false : undefined))
          );
        })
        .catch(() => probe.keys.map(() => undefined));
      for (const { d, k } of probed)
        probes.set(
          k,
          verdicts.then((v) => v[probe.keys.indexOf(d.key)]),
        );
      passed = (await run).stages.import === 'pass';
      // in the order of the sites, however the run's blocks were interleaved
      if (passed)
        proven = sites.filter(({ d }) => known.includes(d.key) || probe.keys.includes(d.key)).map(({ d }) => d.key);
    } else if (passed) {
      proven = known;
      costs.count('validate decorator probe (proven earlier in the run)', repo);
    } else if (refused) costs.count('validate decorator probe (refused earlier in the run)', repo);
    if (passed && proven.length)
      slim = costs.time('emission slim', repo, () =>
        extractText(ws, id, { ...opts, profile: 'slim' }, { seeds, entry, proven: new Set(proven) }),
      );
  }
  if (slim.text === req.source) {
    const emission = slim.record.emission;
    slim.record.emission = {
      profile: 'slim',
      faithfulLines: slim.record.lines,
      slimLines: slim.record.lines,
      removed: emission.removed ?? [],
      proven,
      ...(emission.usageRoots ? { usageRoots: emission.usageRoots } : {}),
    };
    return { record: slim.record, text: slim.text, result: await wholeFaithful('slim module is the faithful text') };
  }
  // slim exists to be shorter: one that removed nothing worth a line (its header lists
  // what it removed) is not validated, the faithful module is kept
  if (slim.record.lines >= faithfulRecord.lines)
    return fallback(`slim module is not shorter (${slim.record.lines} lines, faithful ${faithfulRecord.lines})`);
  let r = await validate(slimRequest(ws, id, opts, req, slim), 'slim');
  const required = req.requiredStages ?? [...DEFAULT_REQUIRED_STAGES];
  // the slim module dropped a definition the chosen arguments name (a class passed by
  // value that the faithful module held only as an option of a registry, or in a branch
  // no validated value reaches): emitted again with it as a usage root, as the faithful
  // module would be (withUsageRoots), kept when it has the line
  if (passesStages(r, required) && !r.usage && r.usageNeeds?.length) {
    const more = await slimWithUsageRoots(
      ws,
      id,
      opts,
      req,
      slim,
      r,
      { seeds, entry, proven: new Set(proven) },
      validate,
      costs,
    );
    if (more) ({ slim, result: r } = more);
  }
  const emission = slim.record.emission;
  const packages = emission.packages ?? [];
  const lostOf = (f: ValidationResult) =>
    (Object.keys(f.stages) as Stage[]).filter((s) => f.stages[s] === 'pass' && r.stages[s] !== 'pass');
  // slim first: the stages the arguments-only run did not reach (usage line, equivalence)
  // matter only when the slim module failed one the faithful module might pass
  if (whole && !(lostOf(faithful).length === 0 && passesStages(r, required) && r.stages.equivalence === 'pass'))
    await wholeFaithful('slim module did not settle the choice');
  const lost = lostOf(faithful);
  const faithfulOk = passesStages(faithful, required);
  if (lost.length || (faithfulOk && !passesStages(r, required))) {
    return fallback(
      `slim module failed ${lost.join(', ') || 'a required stage'}: ${r.category ?? ''} ${(r.error ?? '').slice(0, 300)}`.trim(),
    );
  }
  // the definitions added for the usage line are there for it: a slim module without one
  // has lost what they were added for
  if (usageRoots?.length && faithful.usage && !r.usage)
    return fallback(`slim module has no usage line: ${(r.usageSkipped ?? '').slice(0, 300)}`.trim());
  slim.record.emission = {
    profile: 'slim',
    faithfulLines: faithfulRecord.lines,
    slimLines: slim.record.lines,
    removed: emission.removed ?? [],
    proven,
    ...(packages.length ? { packages } : {}),
    ...(emission.usageRoots ? { usageRoots: emission.usageRoots } : {}),
  };
  return { record: slim.record, text: slim.text, result: r };
}

/** The validation request of a slim module: the faithful module's, with the slim text
 *  and names; the original imports what the slim module imports from installed
 *  distributions from there too (their repositories' checkouts leave its sys.path). */
function slimRequest(
  ws: Workspace,
  id: string,
  opts: PipelineOptions,
  req: ValidationRequest,
  slim: Extraction,
): ValidationRequest {
  const sreq: ValidationRequest = { ...req, source: slim.text, copyNames: slim.namespace?.names };
  if (req.namespace && slim.namespace) sreq.namespace = slim.namespace;
  const packages = slim.record.emission.packages ?? [];
  if (req.original && packages.length) {
    const crossed = [...new Set(slim.record.provenance.map((p) => p.repo))];
    const sysPath = originalSysPath(ws, id, crossed, new Set(packages.map((p) => p.repo)), opts.pool?.env);
    if (sysPath) sreq.original = { ...req.original, sysPath };
  }
  return sreq;
}

/** Usage roots of a slim module (issue 26): its validation passed, but the usage line
 *  names definitions the slim module lacks (`usageNeeds`), which the faithful module may
 *  have held for another reason (slim prunes the options of a registry no validated
 *  string selects, and the branches no validated value reaches, with the definitions
 *  only they named; a class passed as an argument is a value, not a string). The slim
 *  module is emitted again with them as extra roots (`usageRootsOf`, added to the roots
 *  it had) and validated again; kept when it passes every stage the first slim module
 *  passed and has a usage line, with the line bound of withUsageRoots on the lines the
 *  roots add. Else null: the first slim module stays, without a line. */
async function slimWithUsageRoots(
  ws: Workspace,
  id: string,
  opts: PipelineOptions,
  req: ValidationRequest,
  slim: Extraction,
  first: ValidationResult,
  inputs: SlimInputs,
  validate: (req: ValidationRequest, label: string) => Promise<ValidationResult>,
  costs: Costs,
): Promise<{ slim: Extraction; result: ValidationResult } | null> {
  const needs = first.usageNeeds ?? [];
  const found = usageRootsOf(ws, id, needs);
  // every name the line uses must become a root, else a second validation is wasted
  if (found.length < new Set(needs.map(([m, q]) => `${m}\0${q.split('.')[0]}`)).size) return null;
  const had = opts.roots ?? [];
  const roots = [...had, ...found.filter((r) => !had.some((x) => x.mod === r.mod && x.name === r.name))];
  if (roots.length === had.length) return null;
  const repo = ws.blockModule(id)?.mod.repo ?? '';
  const em = costs.time('emission slim', repo, () => extractText(ws, id, { ...opts, profile: 'slim', roots }, inputs));
  if (!em.text || em.text === slim.text) return null;
  const bound = opts.usageRootsMaxLines ?? USAGE_ROOTS_MAX_LINES;
  if (lineCount(em.text) - lineCount(slim.text) > bound) return null;
  const r = await validate(slimRequest(ws, id, opts, req, em), 'slim with usage roots');
  const lost = (Object.keys(first.stages) as Stage[]).some((s) => first.stages[s] === 'pass' && r.stages[s] !== 'pass');
  return !lost && r.usage ? { slim: em, result: r } : null;
}

/** Whether the slim module is likely to be validated, and so worth validating first: the
 *  slim module emitted without chosen arguments (from the call and data sites alone) is
 *  shorter than the faithful one, or has decorators for the sandbox to prove (which then
 *  make it shorter). Only the order of the validations depends on it, never the module
 *  kept or its verdicts: a wrong guess costs the run the guess meant to save. */
function slimLikely(
  ws: Workspace,
  id: string,
  opts: PipelineOptions,
  req: Pick<ValidationRequest, 'callSites' | 'dataSites' | 'source'>,
  faithfulLines: number,
  costs: Costs,
): boolean {
  const repo = ws.blockModule(id)?.mod.repo ?? '';
  const guess = costs.time('emission slim (validation order)', repo, () =>
    extractText(
      ws,
      id,
      { ...opts, profile: 'slim' },
      { seeds: slimSeeds(req, undefined), entry: slimEntry(req, undefined) },
    ),
  );
  if (!guess.text) return false;
  return (guess.text !== req.source && guess.record.lines < faithfulLines) || !!guess.unknownDecorators?.length;
}

/** The folders the store's recorded values name by place (validate/places.ts
 *  storePlaces: the checkouts, the store, nnrag's home), as this workspace has them now. */
function valuePlaces(ws: Workspace): Places {
  return storeValuePlaces(ws.store);
}

/** A validation's arguments (named by place where it was stored, ValidatorPool.namePlaces)
 *  with this machine's folders: slim reads their strings as the run that chose them had
 *  them, so it emits what it emitted before the values were named. */
function localValues<T>(ws: Workspace, v: T): T {
  return v ? valuePlaces(ws).localValue(v) : v;
}

/** What a block is built with, whose strings reach options: its call sites, and the
 *  arguments the faithful module was validated with (the one configuration-table entry
 *  that worked, not every entry), else its data sites. */
export function slimSeeds(req: Pick<ValidationRequest, 'callSites' | 'dataSites'>, args: unknown): string[] {
  const seeds = [...(req.callSites ?? []).map((c) => (typeof c === 'string' ? c : c.text))];
  if (args) seeds.push(...texts(args));
  else seeds.push(...(req.dataSites ?? []).map((d) => d.text));
  return seeds;
}

/** The calls of the block whose values its parameters take besides their defaults
 *  (emit/slim/values.ts): the literal arguments of its call sites and the arguments the
 *  faithful module was validated with. */
export function slimEntry(req: Pick<ValidationRequest, 'callSites'>, args: unknown): EntryCall[] {
  const out: EntryCall[] = [];
  for (const c of req.callSites ?? []) {
    const e = typeof c === 'string' ? entryCallFromText(c) : entryCallFromText(c.text, c.offset);
    if (e) out.push(e);
  }
  const a = entryCallFromArgs(args);
  if (a) out.push(a);
  return out;
}

/** Every string in a JSON value (the validator's arguments are reprs: `"Cfg(type='x')"`). */
function texts(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) texts(x, out);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      out.push(`'${k}'`);
      texts(x, out);
    }
  return out;
}

/** Extract, validate and promote blocks. A block whose stored result was computed from the
 *  same inputs (pipeline/reuse.ts) is read from the store: no emission, no validation, and
 *  no worker starts unless some block or harvest needs one. Where the time went is stored
 *  (`nnrag report`, util/costs.ts). */
export async function extractAndValidate(
  ws: Workspace,
  ids: string[],
  opts: PipelineOptions = {},
): Promise<BlockRecord[]> {
  const out = libraryDir(ws.storeDir, opts.out);
  if (opts.validate === false) {
    return extractBlocks(ws, ids, opts, (id, prev) => {
      const sites = { callSites: callSites(ws, id), dataSites: dataSites(ws, id) };
      return {
        seeds: slimSeeds(sites, localValues(ws, prev.validation?.args)),
        entry: slimEntry(sites, localValues(ws, prev.validation?.args)),
        proven: new Set(prev.emission.proven ?? []),
      };
    });
  }
  const costs = opts.costs ?? new Costs();
  // the environment's installed files are parsed on this thread (emit/submodules.ts)
  await initParser();
  // no interpreter named: the PyPI environment `env create --store` made for this store
  if (!opts.validator && !opts.pool?.python && !opts.pool?.env && !opts.pool?.rootfs) {
    const made = storeEnvironment(ws);
    if (made) opts = { ...opts, pool: { ...opts.pool, env: made } };
  }
  // --env DIR with repositories in environments of their own (their requirements do not
  // resolve with the others'): each group of blocks validates in its repository's
  // environment (environment/pypi.ts `envFor`), in the order given
  if (opts.pool?.env && !opts.pool.python && !opts.validator) {
    const envDir = opts.pool.env;
    const groupOf = envGroups(envDir);
    const byEnv = new Map<string, string[]>();
    for (const id of ids) {
      const dir = groupOf(ws.blockModule(id)?.mod.repo);
      byEnv.set(dir, [...(byEnv.get(dir) ?? []), id]);
    }
    if (byEnv.size > 1) {
      const records = new Map<string, BlockRecord>();
      let done = 0;
      for (const [dir, group] of byEnv) {
        const rs = await extractAndValidate(ws, group, {
          ...opts,
          costs,
          pool: { ...opts.pool, env: dir, python: envPython(dir) },
          onProgress: opts.onProgress ? (_d, _t, r) => opts.onProgress!(++done, ids.length, r) : undefined,
        });
        for (const r of rs) records.set(r.id, r);
      }
      return ids.map((id) => records.get(id)).filter((r): r is BlockRecord => !!r);
    }
    const dir = byEnv.keys().next().value ?? envDir;
    opts = { ...opts, pool: { ...opts.pool, env: dir, python: envPython(dir) } };
  }
  const required = opts.required ?? [...DEFAULT_REQUIRED_STAGES];
  // the environment without starting workers: its id is known from the probe and what its
  // workers reported before (commands/witnesses.ts); workers start when something runs
  const poolOpts: PoolOptions = { ...opts.pool, onWarning: opts.onWarning };
  let pool: ValidatorPool | null = opts.validator ?? null;
  // a pool given by the caller names this workspace's checkouts too (validate/places.ts)
  pool?.nameRepositories(ws.store.listRepos(), ws.storeDir);
  let probed: ProbedEnvironment | null = null;
  let envId: string | null = pool?.envId ?? null;
  // the id its witness harvests are stored under (witness/store.ts harvestKey)
  let harvestId: string | null = pool?.harvestEnvId ?? null;
  let remembered: WorkerInfo | null = null;
  if (!pool) {
    probed = await costs.timeAsync('environment probe', '', () => ValidatorPool.probe(poolOpts));
    remembered = rememberedWorkers(ws.store, probed);
    envId = remembered ? environmentIdOf(probed, remembered) : null;
    harvestId = remembered ? environmentIdOf(probed, remembered, 'harvest') : null;
  }
  // one start, however many blocks ask for the pool at once (a second start would leave
  // the first pool's workers running after close)
  let starting: Promise<ValidatorPool> | null = null;
  // Started for a request (`first`), the workers bind that request's roots from the
  // start: warmed with none, each was restarted for its first request (a worker start,
  // ~2.5 s, per worker and run)
  const getPool = (first?: ValidationRequest): Promise<ValidatorPool> => {
    if (pool) return Promise.resolve(pool);
    const o = first && !poolOpts.roots?.length ? { ...poolOpts, roots: requestRoots(first) } : poolOpts;
    starting ??= startRemembering(ws.store, o, probed ?? undefined).then((p) => {
      pool = p;
      envId = p.envId;
      harvestId = p.harvestEnvId;
      return p;
    });
    return starting;
  };
  if (!envId) await getPool();
  const env = pool ? (pool as ValidatorPool).env : probed!.env;
  const missing = missingLookup({ rootfs: env.rootfs });
  const repoOf = (id: string) => ws.blockModule(id)?.mod.repo ?? '';
  // what the environment is (pool.ts environmentFactsOf), known like its id without starting workers
  const factsOf = () =>
    pool ? (pool as ValidatorPool).facts : probed && remembered ? environmentFactsOf(probed, remembered) : null;
  // the torch requirement each repository declares (its packaging files), read once
  const torchOf = new Map<string, { spec: string; file: string; line: number } | null>();
  const declaredTorch = (repo: string | undefined) => {
    if (!repo) return null;
    if (!torchOf.has(repo)) {
      const root = ws.store.getRepo(repo)?.root;
      const d = root
        ? readDeclaredRequirements(root).find(
            (r) => r.key === 'torch' && r.group === 'install' && /[<>=~!]/.test(r.spec),
          )
        : undefined;
      torchOf.set(repo, d ? { spec: d.spec, file: d.file, line: d.line } : null);
    }
    return torchOf.get(repo)!;
  };
  try {
    // what the validation environment can import decides whether an interned package
    // used as a module object keeps its import (closure.ts)
    const importable = opts.importable ?? env.probe?.modules;
    const profile = opts.profile ?? 'slim';
    // the installed distributions' files, for slim's package boundary (emit/slim/packages.ts)
    const installed = opts.installed ?? installedFilesOf(env.probe?.path);
    costs.time('corpus load', '', () => ws.corpus());
    // witnesses of the repositories of these blocks, harvested (or read) first
    const harvests = new Map<string, HarvestResult>();
    if (opts.witnesses !== false) {
      const repos = new Set<string>();
      for (const id of ids) if (repoOf(id)) repos.add(repoOf(id));
      const listing = fileListing(ws.store);
      for (const repo of [...repos].sort()) {
        try {
          const stored = currentHarvest(ws.store, repo, harvestId!, listing);
          if (stored) {
            harvests.set(repo, stored);
            opts.onHarvest?.(repo, stored, true);
            continue;
          }
          const p = await getPool();
          opts.onHarvestStart?.(repo);
          const got = await costs.timeAsync('harvest', repo, () =>
            repoWitnesses(ws.store, p, repo, {
              modules: libraryModules(ws.corpus(), repo),
              corpus: ws.corpus(),
              onEntry: (e) => {
                // a run step's CPU as the harness measured it in its process; a reused
                // step's stored answer cost nothing now
                if (e.reused) costs.count('harvest run steps reused', repo);
                else {
                  costs.add(`harvest entry ${e.entry}`, repo, e.ms, e.cpuMs ?? null);
                  costs.add('harvest run steps', repo, e.ms, e.cpuMs ?? null);
                }
              },
            }),
          );
          if (got) {
            harvests.set(repo, got.result);
            opts.onHarvest?.(repo, got.result, got.cached);
          }
        } catch (e) {
          opts.onWarning?.(`witness harvest of ${repo} failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
    }
    const digests = {
      code: costs.time('reuse check', '', () => codeDigest()),
      layout: costs.time('reuse check', '', () => layoutDigest(ws)),
      options: {
        profile,
        required,
        equivalence: opts.equivalence !== false,
        witnesses: opts.witnesses !== false,
        intern: opts.intern ?? [],
        extern: opts.extern ?? [],
        importable: importable ?? null,
      },
    };
    const blobs = new Blobs(ws);
    const repoRoots = ws.store
      .listRepos()
      .map((r) => r.root)
      .sort();
    const records: BlockRecord[] = [];
    let done = 0;
    // per block, whether the request's providers could bear on any of its validations
    // (their result says which parameters the providers could fill: providersRelevant)
    const providersMatter = new Set<string>();
    // decorator sites proven (true) or refused (false) by a probe in this environment
    // during this run, or being probed (slimOrFaithful)
    const decoratorProbes = new Map<string, Promise<boolean | undefined>>();
    const validateCached = async (req: ValidationRequest, label: string): Promise<ValidationResult> => {
      const r = await validateCachedRaw(req, label);
      if (req.providers && providersRelevant(r)) providersMatter.add(req.id.split('#')[0]);
      return r;
    };
    // The key of a stored validation reads the copy's provenance header (each file of the
    // closure by its blob, `swh:1:cnt:…`) as the digest of that file's code at its lines
    // (witness/parts.ts codeAtLines): a comment edited in place or added at the end of a
    // closure file (not tokens, Language Reference §2.1.3) keeps the stored result of a
    // copy whose text is otherwise the same; an edit of code, or a line moved, does not.
    let fileOfBlob: Map<string, string> | null = null;
    const blobCode = new Map<string, string>();
    // The key names the original's checkouts `<owner/name>/path`, not their folders
    // (reuse.ts header): a moved checkout finds its stored validations, unless the
    // request's recorded values name paths (rootsKeyed)
    const keyedRoots = new Map<string, string>();
    // the folders recorded values are named by, once for the run (the checkouts do not
    // move while it runs), and the user's inputs named with them
    const places = valuePlaces(ws);
    const userInputs = places.nameValue(opts.userInputs);
    const keyed = (req: ValidationRequest): ValidationRequest => {
      // the recorded values as stored (named by place: the request has them mapped back
      // to this machine's folders)
      const witnesses = places.nameValue(req.witnesses);
      const providers = places.nameValue(req.providers);
      if (witnesses !== req.witnesses || providers !== req.providers) req = { ...req, witnesses, providers };
      if (req.original && !rootsKeyed([witnesses, providers])) {
        const sysPath = keyedSysPath(req.original.sysPath, places, keyedRoots);
        req = { ...req, original: { ...req.original, sysPath } };
      }
      if (!req.source.includes('swh:1:cnt:')) return req;
      if (!fileOfBlob) {
        fileOfBlob = new Map();
        for (const r of ws.store.listRepos())
          for (const f of ws.store.listFiles(r.name)) fileOfBlob.set(f.blob, path.join(r.root, ...f.path.split('/')));
      }
      const files = fileOfBlob;
      const source = req.source.replace(/swh:1:cnt:([0-9a-f]{40})/g, (swhid, blob: string) => {
        let code = blobCode.get(blob);
        if (code === undefined) {
          code = swhid;
          const file = files.get(blob);
          try {
            const text = file ? readFileSync(file) : null;
            // the file as indexed (an edit since keeps the blob)
            const digest = text && gitBlobId(text) === blob ? codeAtLines(text.toString('utf8')) : null;
            if (digest) code = `code:${digest}`;
          } catch {
            /* unreadable: the blob */
          }
          blobCode.set(blob, code);
        }
        return code;
      });
      return { ...req, source };
    };
    const validateCachedRaw = async (req: ValidationRequest, label: string): Promise<ValidationResult> => {
      // the request as its key reads it, rewritten once for the lookup and the store
      const kreq = keyed(req);
      const key = validationKey(kreq, envId!);
      let r = opts.force ? null : getCachedValidation<ValidationResult>(ws.store, key, envId!);
      if (!r) {
        const p = await getPool(req);
        const t = performance.now();
        r = await p.validate(req);
        const repo = repoOf(req.id.split('#')[0]);
        let staged = 0;
        for (const [s, ms] of Object.entries(r.timings)) {
          costs.add(`validate ${label} ${s}`, repo, ms ?? 0, r.cpuTimings?.[s as Stage] ?? null);
          staged += ms ?? 0;
        }
        // the usage line runs between forward and equivalence, in no stage's timing
        if (r.usageMs !== undefined) costs.add(`validate ${label} usage line`, repo, r.usageMs, r.usageCpuMs ?? null);
        // and its parts, as the child measured them: the block built again as the line writes
        // it, its call, its calls on other draws (snippet.py run_snippet)
        for (const [part, p] of Object.entries(r.usageParts ?? {}))
          costs.add(`validate ${label} usage line: ${USAGE_PART_LABEL[part as UsagePart]}`, repo, p.ms, p.cpuMs, p.n);
        // the rest of the request's time in the worker, in its parts as the worker
        // measured them (worker.py OutsideClock: forking the child, its start, its time
        // between stages or in a stage that did not end, its exit, clearing up after it;
        // then its scratch folder's removal and the sandbox's sweep, after `ms`); what
        // the parts do not cover (a result without them: a zygote that died) is `rest`
        let inMs = 0;
        let afterMs = 0;
        for (const [part, [wall, cpu]] of Object.entries(r.outside ?? {})) {
          costs.add(`validate ${label} outside the stages: ${part}`, repo, wall, cpu);
          if (AFTER_MS_PARTS.has(part)) afterMs += wall;
          else inMs += wall;
        }
        const rest = r.ms - staged - (r.usageMs ?? 0) - inMs;
        if (rest > 0.5 || !r.outside) costs.add(`validate ${label} outside the stages: rest`, repo, Math.max(0, rest));
        if (r.equivalence?.originalMs !== undefined)
          costs.add(`validate ${label} equivalence: original build`, repo, r.equivalence.originalMs);
        if (r.zygoteMs !== undefined)
          costs.add(
            `repository zygote import${r.zygoteSibling ? ': sibling module' : ''}`,
            repo,
            r.zygoteMs,
            r.zygoteCpuMs ?? null,
          );
        // queued behind other requests (summed over requests that wait at once)
        costs.add('queued for a worker', repo, Math.max(0, performance.now() - t - r.ms - afterMs));
        // (the started pool's id, should it differ from the one remembered)
        if (r.category !== 'crash' && r.category !== 'timeout')
          putCachedValidation(ws.store, validationKey(kreq, p.envId), p.envId, forStorage(r));
      } else costs.count(`validate ${label} (stored result)`, repoOf(req.id.split('#')[0]));
      return r;
    };
    await Promise.all(
      ids.map(async (id, i) => {
        const repo = repoOf(id);
        const sites = costs.time('call and data sites', repo, () => ({
          callSites: callSites(ws, id),
          dataSites: dataSites(ws, id),
        }));
        const harvest = harvests.get(repo);
        const { module: origModule, className } = parseBlockId(id);
        const wits = harvest ? witnessesOf(harvest, `${origModule}.${className}`) : [];
        const provs = harvest && !wits.length ? providersOf(harvest, `${origModule}.${className}`) : {};
        const witnessFields =
          harvest && wits.length
            ? { witnesses: wits, witnessRepoTops: repoTops(harvest) }
            : harvest && Object.keys(provs).length
              ? { providers: provs, witnessRepoTops: repoTops(harvest) }
              : {};
        // the providers apart: they count only for a block whose validation they could touch
        // (as stored: their folders named by place, so that the digests are the same on any
        // machine; a value still naming an absolute path keys the checkouts' folders)
        const { providers: requestProviders, ...ownFields } = places.nameValue(witnessFields) as {
          providers?: unknown;
        };
        const now = inputDigests({
          code: digests.code,
          env: envId!,
          options: digests.options,
          layout: digests.layout,
          request: {
            ...sites,
            ...ownFields,
            ...(userInputs ? { userInputs } : {}),
            // recorded values that name paths hold where the harvest ran (reuse.ts rootsKeyed)
            ...(rootsKeyed([ownFields, userInputs]) ? { roots: repoRoots } : {}),
          },
          sites,
          witnesses: { ...ownFields, ...(userInputs ? { userInputs } : {}) },
          // (the providers' paths count where the providers do)
          providers:
            requestProviders !== undefined && rootsKeyed(requestProviders)
              ? { providers: requestProviders, roots: repoRoots }
              : requestProviders,
        });
        // the stored result, when it was computed from the same inputs
        const stored = opts.force ? null : getExtraction(ws.store, id);
        let why = opts.force ? '--force' : 'not stored';
        if (stored && stored.status !== 'extracted' && stored.record.validation) {
          const changed = costs.time('reuse check', repo, () => inputsChanged(stored.record.inputs, now, blobs));
          if (changed === null) {
            const cat = stored.record.validation.category;
            const unsettled =
              cat === 'crash' || cat === 'timeout' ? `; the stored result is a ${cat} (--force validates again)` : '';
            const record: BlockRecord = {
              ...stored.record,
              reuse: {
                reused: true,
                why: `inputs unchanged (files of its closure, call sites, witnesses, environment, options, nnrag)${unsettled}`,
              },
            };
            const file = blockFile(out, stored.status, id);
            if (!existsSync(file)) record.file = placeBlockFile(out, stored.status, id, '.py', stored.text);
            else record.file = file;
            costs.count('blocks reused', repo);
            records[i] = record;
            opts.onProgress?.(++done, ids.length, record);
            return;
          }
          why = changed;
        } else if (stored)
          why = stored.status === 'extracted' ? 'stored without validation' : 'stored without a validation result';
        const first = costs.time('emission faithful', repo, () =>
          extractText(ws, id, { ...opts, importable, installed, profile: 'faithful' }),
        );
        let namespace = first.namespace;
        let result: ValidationResult | null = null;
        let record = first.record;
        let text = first.text;
        if (text) {
          costs.count('blocks validated', repo);
          let req: ValidationRequest = {
            id,
            source: text,
            className,
            ...(namespace ? { copyNames: namespace.names } : {}),
            ...sites,
            requiredStages: required,
            ...witnessFields,
          };
          if (opts.userInputs) req.witnesses = [opts.userInputs, ...(req.witnesses ?? [])];
          const crossed = [...new Set(record.provenance.map((p) => p.repo))];
          const sysPath =
            opts.equivalence === false ? null : originalSysPath(ws, id, crossed, undefined, opts.pool?.env);
          if (sysPath) req.original = { module: origModule, className: req.className, sysPath };
          // the namespace stage compares the copy's names with the original modules'
          if (sysPath && namespace) req.namespace = namespace;
          // slim first: the faithful module's arguments-only validation chooses the
          // arguments slim emission reads, and the whole faithful validation runs only
          // where the choice between the two modules needs it (slimOrFaithful)
          let whole: (() => Promise<ValidationResult>) | undefined;
          if (
            profile === 'slim' &&
            opts.slimFirst !== false &&
            req.original &&
            slimLikely(ws, id, { ...opts, importable, installed }, req, record.lines, costs)
          ) {
            const a = await validateCached({ ...req, argumentsOnly: true }, 'faithful arguments');
            // a run that did not pass forward ran exactly as the whole validation would
            // (the usage line and equivalence come after forward): it is that validation.
            // One whose chosen arguments name definitions the module lacks went on as the
            // whole validation in the same child (`whole`: the usage roots below need it,
            // faithful first as before), so the module is built and run once
            if (a.stages.forward !== 'pass' || a.whole) {
              result = a;
              if (a.whole) costs.count('validate faithful arguments went on whole (usage needs)', repo);
            } else if (!a.usageNeeds?.length) {
              result = a;
              const wreq = req;
              whole = () => validateCached(wreq, 'faithful');
            }
          }
          result ??= await validateCached(req, 'faithful');
          // the chosen arguments name definitions the module lacks: with them as roots
          // the module can have a usage line (kept only when it then has one)
          const emitted = [record];
          let roots: BuildOptions['roots'];
          // why the usage roots gave no line (withUsageRoots), kept over the reason of
          // the module finally chosen
          let rootsWhy: string | undefined;
          if (!whole && passesStages(result, required) && !result.usage && result.usageNeeds?.length) {
            const more = await withUsageRoots(
              ws,
              id,
              { ...opts, importable, installed, profile },
              req,
              result,
              validateCached,
              costs,
            );
            if (more) {
              emitted.push(more.record);
              ({ record, text, result, req, roots } = more);
              namespace = more.namespace;
            } else rootsWhy = result.usageSkipped;
          }
          // no usage roots could give the line (the names are not indexed, or copying them
          // would bury the block): a line that imports them from an installed
          // distribution the block's module imports (export pins it), validated again
          if (passesStages(result, required) && !result.usage && result.usageNeeds?.length) {
            const usagePackages = installedImports(
              env.probe ?? null,
              [...moduleImportTops(ws.blockModule(id)?.mod), ...ownPackage(ws.blockModule(id)?.mod), ...record.externs],
              KNOWN_DISTRIBUTIONS,
            );
            if (result.usageNeeds.some(([m]) => usagePackages.includes(m.split('.')[0]))) {
              const ireq: ValidationRequest = { ...req, usagePackages };
              const r = await validateCached(ireq, 'faithful, usage from installed packages');
              const lost = (Object.keys(result.stages) as Stage[]).some(
                (st) => result!.stages[st] === 'pass' && r.stages[st] !== 'pass',
              );
              // names of the installed packages imported, the others (the repository's
              // own definitions the line also names: detr's FrozenBatchNorm2d beside
              // torchvision's ResNet) copied as usage roots
              const more =
                !lost && !r.usage && r.usageNeeds?.length
                  ? await withUsageRoots(
                      ws,
                      id,
                      { ...opts, importable, installed, profile },
                      ireq,
                      r,
                      validateCached,
                      costs,
                    )
                  : null;
              if (more) {
                emitted.push(more.record);
                ({ record, text, result, req, roots } = more);
                namespace = more.namespace;
                rootsWhy = undefined;
              } else if (!lost && r.usage) {
                result = r;
                req = ireq;
                rootsWhy = undefined;
              } else if (rootsWhy !== undefined || r.usageSkipped)
                rootsWhy =
                  `${rootsWhy ?? result.usageSkipped ?? ''}; imported from ${usagePackages.join(', ')}: ${lost ? 'a stage failed' : (r.usageSkipped ?? 'no usage line')}`
                    .replace(/^; /, '')
                    .slice(0, 400);
            }
          }
          if (profile === 'slim') {
            const chosen = await slimOrFaithful(
              ws,
              id,
              { ...opts, importable, installed, roots },
              req,
              { record, result },
              namespace,
              validateCached,
              costs,
              decoratorProbes,
              whole,
            );
            record = chosen.record;
            text = chosen.text;
            result = chosen.result;
          }
          // layers (module type → count in the instantiated block) feed the library spec
          const v: ValidationRecord = result.layers ? { ...toRecord(result), layers: result.layers } : toRecord(result);
          if (v.usageSkipped && rootsWhy) v.usageSkipped = rootsWhy;
          // the environment that ran (a cached result may predate the facts), with the
          // installed versions of what this block imports: export pins these
          const facts = factsOf();
          if (facts)
            v.environment = factsForBlock(facts, env.probe, [...record.externs, ...usageImportModules(result.usage)], {
              ...KNOWN_DISTRIBUTIONS,
              ...packageDistributions(record.emission.packages),
            });
          // "environment lacks X" (and whether Debian has X) apart from failures of the block
          if (result.category === 'missing-extern') {
            const m = await missing(result.error);
            if (m) v.missing = m;
          }
          // torch lacks an API: the torch the repository declares is the version to use
          if (result.category === 'torch-version') {
            const t = declaredTorch(ws.blockModule(id)?.mod.repo);
            if (t) v.torchRequired = t;
          }
          // one validation per environment: a run here replaces this environment's entry
          // and keeps the others' for the same module text; the block is validated when
          // it passed in any of them
          const prev = getExtraction(ws.store, id);
          const earlier = prev && prev.hash === textHash(text) ? validationsOf(prev.record) : {};
          const merged = addValidation(earlier, v, passesStages(result, required));
          record.validation = merged.validation;
          record.validations = merged.validations;
          record.ok = merged.ok;
          const status = validatedStatus(record.ok);
          const final = result;
          const placed = placeOrReport(record, () => {
            const file = placeBlockFile(out, status, id, '.py', text);
            if (!record.ok) {
              // why it failed, next to the module (library/layout.ts)
              const storedResult = forStorage(final);
              placeBlockFile(
                out,
                status,
                id,
                '.json',
                JSON.stringify(
                  {
                    id,
                    stage: storedResult.stage,
                    category: storedResult.category,
                    error: storedResult.error,
                    traceback: storedResult.traceback ?? null,
                  },
                  null,
                  2,
                ) + '\n',
              );
            } else removeBlockFile(out, id, '.json');
            return file;
          });
          // a crash or timeout is kept too (the validation cache does not keep them): a
          // re-run with nothing changed says so and `--force` validates again
          const { providers: nowProviders, ...inputs } = now;
          record.inputs = {
            ...inputs,
            ...(nowProviders !== undefined && providersMatter.has(id) ? { providers: nowProviders } : {}),
            files: costs.time('reuse check', repo, () =>
              closureFiles(ws, id, emitted.includes(record) ? emitted : [...emitted, record]),
            ),
          };
          record.reuse = { reused: false, why };
          if (placed)
            putExtraction(ws.store, {
              id,
              hash: textHash(text),
              ok: record.ok,
              status,
              lines: record.lines,
              record,
              text,
              // the de-duplication signature of the module, computed once here (dedup loads it)
              signature: dedupSignatureRow(text),
            });
        }
        records[i] = record;
        opts.onProgress?.(++done, ids.length, record);
      }),
    );
    return records;
  } finally {
    // a start still under way when a block failed is waited for, so that it is closed too
    const p =
      (pool as ValidatorPool | null) ??
      (starting ? await (starting as Promise<ValidatorPool>).catch(() => null) : null);
    if (p) {
      costs.add('worker start', '', p.spawned.readyMs, p.spawned.readyCpuMs, p.spawned.starts + p.spawned.restarts);
      costs.count('worker restart', '', p.spawned.restarts);
    }
    if (p && !opts.validator) await p.close();
    ws.store.setKV(KV_KEYS.costsLast, JSON.stringify(costs.table('extract + validate')));
  }
}

/** The top-level names of a module's absolute imports (module level and inside
 *  functions; a relative import is the repository's own package, PEP 328), those of its
 *  `if __name__ == "__main__":` block left out: they run only when the file is a script
 *  (Library Reference, `__main__`), not when the module is imported. */
export function moduleImportTops(mod: CorpusModule | undefined): string[] {
  const out = new Set<string>();
  for (const st of mod?.facts.statements ?? []) {
    // the `if` whose test reads `__name__` first: the script guard
    const first = st.kind === 'if_statement' ? [...st.refs].sort((a, b) => a.start - b.start)[0] : undefined;
    if (first?.name === '__name__') continue;
    for (const e of [...st.imports, ...(st.nestedImports ?? []).flatMap((n) => n.edges)]) {
      if (e.kind === 'from' && e.level > 0) continue;
      const top = e.module.split('.')[0];
      if (top) out.add(top);
    }
  }
  return [...out];
}

/** The top-level package a module belongs to, which importing it imports first (Python
 *  Language Reference 5.2.1, "Regular packages": importing `parent.one` executes
 *  `parent/__init__.py`): a module's own repository, installed in the environment (`env
 *  create --store` installs each indexed repository's checkout), is a distribution the
 *  module imports. A top-level module (no package) gives none. */
export function ownPackage(mod: CorpusModule | undefined): string[] {
  const parts = mod?.name.split('.') ?? [];
  return parts.length > 1 ? [parts[0]] : [];
}

/** The modules a usage line imports public names from (its `from P import N` lines,
 *  snippet.py installed_spelling): what the block was tested with, export pins them. */
export function usageImportModules(usage: string | null | undefined): string[] {
  return [...(usage ?? '').matchAll(/^from ([A-Za-z_][A-Za-z0-9_.]*) import /gm)].map((m) => m[1]);
}

/** The installed files of an environment's sys.path, one reader per path list (its RECORDs
 *  are read once per run). */
const installedFilesMemo = new Map<string, InstalledFiles>();
function installedFilesOf(sysPath: readonly string[] | undefined): InstalledFiles | undefined {
  if (!sysPath?.length) return undefined;
  const key = sysPath.join('\0');
  let f = installedFilesMemo.get(key);
  if (!f) installedFilesMemo.set(key, (f = new InstalledFiles(sysPath)));
  return f;
}

/** The top-level import name → distribution of the packages a slim module imports from
 *  (`emission.packages`): their RECORD named the distribution, whatever its name. */
function packageDistributions(packages: BlockRecord['emission']['packages']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of packages ?? []) for (const m of p.modules) out[m.split('.')[0]] = p.distribution;
  return out;
}
