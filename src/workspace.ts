// A Workspace: an opened store (`--store DIR`) plus the corpus and resolver built from it on
// demand, and the one lookup of a block id to its module and class statement. Every
// stage after indexing works through one (resolve, discover, extract, validate, library).
import path from 'node:path';
import { parseBlockId } from './discover/ids.js';
import type { SourceLocation } from './records/block.js';
import type { ClassFacts } from './parse/types.js';
import { classStatement } from './resolve/classes.js';
import type { Corpus, CorpusModule } from './resolve/corpus.js';
import { loadCorpus } from './resolve/load.js';
import { Resolver, type ResolveOptions } from './resolve/names.js';
import { IndexStore } from './store/store.js';
import { SlimAnalysis } from './emit/slim/analysis.js';

export class Workspace {
  private corpusCache: Corpus | null = null;
  /** resolvers by their options: a run alternates between the plain one (call sites)
   *  and the one with the environment's importable list (extraction), and a resolver's
   *  memoised resolutions are worth keeping across blocks */
  private resolvers = new Map<string, Resolver>();
  /** slim emission's block-independent analysis, one per resolver (emit/slim/analysis.ts) */
  private slimAnalyses = new WeakMap<Resolver, SlimAnalysis>();
  /** the importable list is long and the same array for a whole run: keyed by identity */
  private importableIds = new WeakMap<readonly string[], number>();
  private nextImportableId = 0;

  private constructor(
    readonly store: IndexStore,
    readonly storeDir: string,
  ) {}

  /** Open (`create`, the default: or create) the store in `storeDir`. */
  static open(storeDir = '.nnrag', opts: { create?: boolean } = {}): Workspace {
    const dir = path.resolve(storeDir);
    return new Workspace(IndexStore.open(dir, opts), dir);
  }

  close(): void {
    this.store.close();
  }

  /** Forget the in-memory corpus (after indexing). */
  invalidate(): void {
    this.corpusCache = null;
    this.resolvers.clear();
  }

  corpus(): Corpus {
    if (!this.corpusCache) this.corpusCache = loadCorpus(this.store);
    return this.corpusCache;
  }

  /** The module and class a block id names (`module.Class` or `repo:module.Class`,
   *  see discover/ids.ts), or null when no indexed module defines that class. */
  blockModule(id: string): { mod: CorpusModule; className: string; cls: ClassFacts } | null {
    const { repo, module, className } = parseBlockId(id);
    const corpus = this.corpus();
    const mods = repo !== null ? [corpus.ownModule(repo, module)] : corpus.modulesNamed(module);
    for (const mod of mods) {
      const cls = classStatement(mod, className);
      if (mod && cls) return { mod, className, cls };
    }
    return null;
  }

  /** Where the block's class is defined (null when no indexed module defines it). */
  blockSource(id: string): SourceLocation | null {
    const found = this.blockModule(id);
    if (!found) return null;
    return {
      repo: found.mod.repo,
      module: found.mod.name,
      className: found.className,
      path: found.mod.path,
      line: found.cls.line,
    };
  }

  resolver(opts: ResolveOptions = {}): Resolver {
    let importable: number | undefined;
    if (opts.importable) {
      importable = this.importableIds.get(opts.importable);
      if (importable === undefined) this.importableIds.set(opts.importable, (importable = this.nextImportableId++));
    }
    const key = JSON.stringify({ ...opts, importable });
    let r = this.resolvers.get(key);
    if (!r) this.resolvers.set(key, (r = new Resolver(this.corpus(), opts)));
    return r;
  }

  /** The slim analysis of a resolver of this workspace (kept as long as the resolver). */
  slimAnalysis(resolver: Resolver): SlimAnalysis {
    let a = this.slimAnalyses.get(resolver);
    if (!a) this.slimAnalyses.set(resolver, (a = new SlimAnalysis(this.corpus(), resolver)));
    return a;
  }
}
