// The search tests' module text: a small module defining one class, its docstring and one
// layer attribute given (search-cap, search-large, search-fields, search-synced), and the
// stored block of such a module (putModule: search-fields, search-large, search-packed).
import { putExtraction, textHash } from '../../src/store/records.js';
import { emptyRecord, type BlockStatus } from '../../src/records/block.js';
import type { IndexStore } from '../../src/store/store.js';

/** A small module defining one class, its docstring and one layer attribute given. */
export function moduleText(cls: string, doc: string, layer = 'nn.Linear(dim, dim)'): string {
  return [
    'import torch.nn as nn',
    '',
    '',
    `class ${cls}(nn.Module):`,
    `    """${doc}"""`,
    '',
    '    def __init__(self, dim=8):',
    '        super().__init__()',
    `        self.proj = ${layer}`,
    '',
    '    def forward(self, x):',
    '        return self.proj(x)',
    '',
  ].join('\n');
}

/** Store block `id` of `repo` whose module is `text`, from file `path` (module `module`),
 *  with the given status (validated blocks are `ok`). */
export function putModule(
  store: IndexStore,
  o: { id: string; repo: string; text: string; status?: BlockStatus; path?: string; module?: string },
): void {
  const status = o.status ?? 'validated';
  const path = o.path ?? 'm.py';
  putExtraction(store, {
    id: o.id,
    hash: textHash(o.text),
    ok: status === 'validated',
    status,
    lines: o.text.split('\n').length,
    record: {
      ...emptyRecord(o.id, o.repo),
      provenance: [
        {
          repo: o.repo,
          revision: null,
          url: null,
          path,
          module: o.module ?? path.replace(/\.py$/, ''),
          swhid: '',
          ranges: [[4, 12]],
        },
      ],
    },
    text: o.text,
  });
}
