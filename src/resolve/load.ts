// Builds the resolver's Corpus from the IndexStore: module rows plus their facts, with
// the on-demand loader attached (modules outside the configured paths, ondemand.ts).
import type { IndexStore } from '../store/store.js';
import { Corpus, type CorpusModule } from './corpus.js';
import { OnDemandLoader } from './ondemand.js';

export function loadCorpus(store: IndexStore): Corpus {
  const c = store.loadCorpus();
  const facts = store.loadAllFacts();
  const modules: CorpusModule[] = [];
  for (const f of c.files) {
    if (!f.module) continue;
    const ff = facts.get(f.blob);
    if (!ff) continue;
    modules.push({ name: f.module, repo: f.repo, path: f.path, isPackage: /(^|\/)__init__\.py$/.test(f.path), blob: f.blob, facts: ff });
  }
  const repos = c.repos.map((r) => ({ name: r.name, url: r.url, root: r.root, revision: r.revision, priority: r.priority ?? 0 }));
  const corpus = new Corpus(repos, modules);
  corpus.setLoader(new OnDemandLoader(store));
  return corpus;
}
