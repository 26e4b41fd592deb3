// The search tests' module text: a small module defining one class, its docstring and one
// layer attribute given (search-cap, search-large, search-fields, search-synced).

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
