// Repository text printed by the CLI cannot act on the terminal: escape sequences in a
// docstring or a config key (clear the screen, retitle the window, a fake "OK" after a
// carriage return, C1 CSI) are shown as escapes by every command's output.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { safeJson, safeText, showId } from '../../src/cli/terminal.js';
import { repoRoot, tempDir } from '../helpers.js';

const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

test('safeText shows control characters as escapes and keeps newlines and tabs', () => {
  assert.equal(safeText('a\x1b[2Jb\r\x9b1m\tc\n\u202ed'), 'a\\x1b[2Jb\\x0d\\x9b1m\tc\n\\u202ed');
  assert.equal(safeText('plain ü ✓'), 'plain ü ✓');
  const j = JSON.stringify({ k: 'x\x1b\x9b\u202e' });
  assert.deepEqual(JSON.parse(safeJson(j)), { k: 'x\x1b\x9b\u202e' });
  assert.ok(!RAW.test(safeJson(j)));
});

test('index, discover, extract, library, search and stats print no raw control sequence from a repository', () => {
  const dir = tempDir();
  const repo = path.join(dir, 'repo');
  mkdirSync(path.join(repo, 'escpkg'), { recursive: true });
  writeFileSync(path.join(repo, 'escpkg', '__init__.py'), '');
  writeFileSync(
    path.join(repo, 'escpkg', 'blocks.py'),
    'import torch.nn as nn\n\nCONFIG = {"\x1b[2Jkey\x9b31m": 1}\n\n\nclass Gate(nn.Module):\n' +
      '    """Gate\x1b]0;pwned\x07\x1b[2J\x1b[32mOK\x1b[0m\r\x9b1mfake"""\n\n' +
      '    def __init__(self, dim=4):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n\n' +
      '    def forward(self, x):\n        return self.fc(x)\n',
  );
  const store = path.join(dir, 'store');
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const runs = [
    ['index', '--repo', repo],
    ['discover'],
    ['extract', '--all', '--no-validate'],
    ['library'],
    ['search', 'pwned'],
    ['search', 'pwned', '--json'],
    ['stats'],
  ];
  let all = '';
  for (const args of runs) {
    const r = spawnSync(process.execPath, [bin, ...args, '--store', store], {
      encoding: 'utf8',
      cwd: dir,
      timeout: 120_000,
    });
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    const m = RAW.exec(r.stdout + r.stderr);
    assert.equal(
      m,
      null,
      `${args.join(' ')} printed ${JSON.stringify(m?.[0])}: ${JSON.stringify((r.stdout + r.stderr).slice(0, 400))}`,
    );
    all += r.stdout;
  }
  // the docstring reached the output, escaped
  assert.match(all, /Gate\\x1b\]0;pwned/);
});

test('ids that look identical print differently: non-ASCII characters escaped and marked', () => {
  assert.equal(showId('models.Net'), 'models.Net');
  assert.equal(showId('m\u043edels.Net'), 'm\\u043edels.Net [non-ASCII]');
  const dir = tempDir();
  const repo = path.join(dir, 'repo');
  mkdirSync(repo, { recursive: true });
  const body = 'import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n';
  writeFileSync(path.join(repo, 'models.py'), body);
  writeFileSync(path.join(repo, 'm\u043edels.py'), body); // a Cyrillic о
  const store = path.join(dir, 'store');
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [bin, ...args, '--store', store], { encoding: 'utf8', cwd: dir, timeout: 120_000 });
  assert.equal(run('index', '--repo', repo).status, 0);
  const out = run('discover')
    .stdout.split('\n')
    .filter((l) => l.includes('Net'));
  assert.equal(out.length, 2, out.join('\n'));
  assert.ok(
    out.some((l) => l.startsWith('models.Net ')),
    out.join('\n'),
  );
  assert.ok(
    out.some((l) => l.startsWith('m\\u043edels.Net [non-ASCII]')),
    out.join('\n'),
  );
});
