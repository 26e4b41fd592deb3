// Training pairs (`nnrag export-pairs`) and repository licenses: a copy of the example
// corpus under an MIT license file is indexed and extracted (without validation, so the
// pairs come from `--all`); every JSON line must parse, name the license and carry the
// module text as its target; the instruction is built from the spec, not the source.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import * as api from '../../src/nnrag.js';
import { buildLibrary } from '../../src/library/library.js';
import { instructionOf, trainingPairs, type TrainingPair } from '../../src/library/pairs.js';
import { detectLicense, licenseFromName, licenseFromText } from '../../src/library/provenance.js';
import { listExtractions } from '../../src/store/records.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { repoRoot, tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';

const MIT = `MIT License

Copyright (c) 2024 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software.
`;

const BIN = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
let store: string;

before(async () => {
  const root = path.join(tempDir(), 'examples');
  cpSync(path.join(repoRoot, 'examples'), root, { recursive: true });
  writeFileSync(path.join(root, 'LICENSE'), MIT);
  store = tempDir();
  const ws = api.Workspace.open(store);
  try {
    await api.index(ws, {
      repos: [{ name: 'ex', url: null, path: root, priority: 1, paths: [], description: null, packageRoots: null }],
    });
    await extractAndValidate(
      ws,
      api.discover(ws).map((b) => b.id),
      { validate: false },
    );
  } finally {
    ws.close();
  }
});

test('export-pairs: one JSON line per block with license, provenance and the module as target', {
  skip: needsTorch(),
}, async () => {
  const file = path.join(store, 'pairs.jsonl');
  const { stdout } = await promisify(execFile)(process.execPath, [
    BIN,
    'export-pairs',
    '--store',
    store,
    '--out',
    file,
    '--all',
    '--json',
    '--python',
    '/usr/bin/python3',
  ]);
  const summary = JSON.parse(stdout) as { pairs: number; licenses: Record<string, number> };
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  assert.equal(lines.length, 13);
  assert.equal(summary.pairs, 13);
  assert.deepEqual(summary.licenses, { MIT: 13 });
  const ws = api.Workspace.open(store);
  try {
    const texts = new Map(listExtractions(ws.store).map((e) => [e.id, e.text]));
    for (const l of lines) {
      const p = JSON.parse(l) as TrainingPair;
      assert.equal(p.license, 'MIT');
      assert.deepEqual(
        p.repos.map((r) => [r.name, r.license]),
        [['ex', 'MIT']],
      );
      assert.equal(p.target, texts.get(p.id));
      assert.ok(p.target.includes(`class ${p.id.split('.').pop()}`));
      assert.ok(p.provenance.length > 0 && p.provenance.every((x) => /^swh:1:cnt:[0-9a-f]{40}$/.test(x.swhid)));
      assert.match(p.instruction, new RegExp(`named ${p.id.split('.').pop()}\\.`));
      // the instruction is derived facts, not code
      assert.ok(!p.instruction.includes('def ') && !p.instruction.includes('self.'));
    }
    const wa = lines.map((l) => JSON.parse(l) as TrainingPair).find((p) => p.id.endsWith('.WindowAttention'))!;
    assert.match(wa.instruction, /\(attention\)/);
    assert.match(wa.instruction, /Constructor: WindowAttention\(dim=32, num_heads=4, window_size=4, qkv_bias=True\)\./);
    assert.match(wa.instruction, /Purpose: Local window attention/);
    // without --all only validated blocks make pairs: none here
    assert.equal(trainingPairs(ws.store).length, 0);
  } finally {
    ws.close();
  }
});

test('instruction mentions shapes, layers and extra imports when the spec has them', async () => {
  const ws = api.Workspace.open(store);
  try {
    await buildLibrary(ws, { python: '/usr/bin/python3' });
    const [p] = trainingPairs(ws.store, { all: true }).filter((x) => x.id.endsWith('layers.conv.ConvBnAct'));
    assert.ok(p);
    const spec = {
      ...JSON.parse(readFileSync(path.join(store, 'library', 'extracted', `${p.id}.spec.json`), 'utf8')),
      input_shapes: [[2, 3, 32, 32]],
      output_shapes: [[2, 16, 32, 32]],
      layers: { Conv2d: 1, BatchNorm2d: 1, ReLU: 1 },
      params: 480,
      externs: ['torch', 'einops'],
    };
    const text = instructionOf(spec);
    assert.match(text, /maps inputs of shape \[2, 3, 32, 32\] to outputs of shape \[2, 16, 32, 32\]/);
    assert.match(text, /It contains BatchNorm2d, Conv2d, ReLU\./);
    assert.match(text, /Parameters: 480\./);
    assert.match(text, /Use only torch and einops imports\./);
  } finally {
    ws.close();
  }
});

test('license texts and metadata names map to SPDX ids', () => {
  assert.equal(licenseFromText(MIT), 'MIT');
  assert.equal(
    licenseFromText(
      '                                 Apache License\n                           Version 2.0, January 2004',
    ),
    'Apache-2.0',
  );
  assert.equal(licenseFromText('GNU GENERAL PUBLIC LICENSE\n Version 3, 29 June 2007'), 'GPL-3.0');
  assert.equal(licenseFromText('GNU GENERAL PUBLIC LICENSE\n Version 2, June 1991'), 'GPL-2.0');
  assert.equal(licenseFromText('GNU LESSER GENERAL PUBLIC LICENSE Version 3'), 'LGPL-3.0');
  const bsd = 'Redistribution and use in source and binary forms, with or without modification, are permitted provided';
  assert.equal(licenseFromText(bsd + ' ... 3. Neither the name of the copyright holder nor'), 'BSD-3-Clause');
  assert.equal(licenseFromText(bsd + ' ... 2. Redistributions in binary form'), 'BSD-2-Clause');
  assert.equal(licenseFromText('All rights reserved. Do not copy.'), 'unknown');
  assert.equal(licenseFromName('MIT'), 'MIT');
  assert.equal(licenseFromName('Apache 2.0'), 'Apache-2.0');
  assert.equal(licenseFromName('Apache License 2.0'), 'Apache-2.0');
  assert.equal(licenseFromName('BSD-3-Clause'), 'BSD-3-Clause');
  assert.equal(licenseFromName('GPLv3'), 'GPL-3.0');
  assert.equal(licenseFromName('Proprietary'), 'unknown');
});

test('license from the root license file, else pyproject.toml, setup.cfg or setup.py', () => {
  const mk = (files: Record<string, string>) => {
    const d = tempDir();
    for (const [f, t] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(d, f)), { recursive: true });
      writeFileSync(path.join(d, f), t);
    }
    return d;
  };
  assert.deepEqual(detectLicense(mk({ 'LICENSE.txt': MIT })), { spdx: 'MIT', source: 'LICENSE.txt' });
  assert.deepEqual(detectLicense(mk({ COPYING: 'GNU GENERAL PUBLIC LICENSE\nVersion 3' })), {
    spdx: 'GPL-3.0',
    source: 'COPYING',
  });
  assert.deepEqual(
    detectLicense(mk({ 'pyproject.toml': '[project]\nname = "x"\nlicense = {text = "Apache-2.0"}\n' })),
    { spdx: 'Apache-2.0', source: 'pyproject.toml' },
  );
  assert.deepEqual(detectLicense(mk({ 'pyproject.toml': '[project]\nlicense = "BSD-3-Clause"\n' })), {
    spdx: 'BSD-3-Clause',
    source: 'pyproject.toml',
  });
  assert.deepEqual(detectLicense(mk({ 'setup.cfg': '[metadata]\nlicense = MIT\n' })), {
    spdx: 'MIT',
    source: 'setup.cfg',
  });
  assert.deepEqual(detectLicense(mk({ 'setup.py': "setup(name='x', license='Apache 2.0')\n" })), {
    spdx: 'Apache-2.0',
    source: 'setup.py',
  });
  // a license file in a subfolder is not the repository's license
  assert.deepEqual(detectLicense(mk({ 'sub/LICENSE': MIT })), { spdx: 'unknown', source: null });
  assert.deepEqual(detectLicense(mk({ LICENSE: 'custom terms' })), { spdx: 'unknown', source: 'LICENSE' });
  assert.deepEqual(detectLicense('/nonexistent/dir'), { spdx: 'unknown', source: null });
});
