// Categories of small, typical blocks (shapes taken from common PyTorch code: timm's
// Attention/Block/Mlp/SEModule, torchvision's ResNet/Bottleneck, losses).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { categorize, CATEGORIES, layerInventory, type CategoryInput } from '../../src/library/category.js';

const cases: [CategoryInput, string][] = [
  [{ name: 'FocalLoss', layers: {} }, 'loss'],
  [{ name: 'Dice', bases: ['torch.nn.modules.loss._Loss'] }, 'loss'],
  [{ name: 'Criterion', forwardParams: ['pred', 'target'] }, 'loss'],
  [{ name: 'Scorer', forwardParams: ['logits', 'labels'] }, 'loss'],
  [{ name: 'LayerNorm2d', bases: ['nn.LayerNorm'] }, 'normalization'],
  [{ name: 'RMSNorm', layers: {} }, 'normalization'],
  [{ name: 'FrozenBN', bases: ['torch.nn.modules.batchnorm._BatchNorm'] }, 'normalization'],
  [{ name: 'GeM', layers: {} }, 'pooling'],
  [{ name: 'SelectAdaptive', layers: { 'nn.AdaptiveAvgPool2d': 1, 'nn.Flatten': 1 } }, 'pooling'],
  [
    {
      name: 'ResNet',
      layers: {
        'nn.Conv2d': 53,
        'nn.BatchNorm2d': 53,
        'nn.ReLU': 1,
        'nn.MaxPool2d': 1,
        'nn.AdaptiveAvgPool2d': 1,
        'nn.Linear': 1,
      },
    },
    'architecture',
  ],
  [{ name: 'VisionTransformer', layers: { PatchEmbed: 1, Block: 12, LayerNorm: 1, Linear: 1 } }, 'architecture'],
  [
    {
      name: 'Tiny',
      docstring: 'A small classification model.',
      layers: { Conv2d: 4, BatchNorm2d: 3, ReLU: 1, Linear: 1 },
    },
    'architecture',
  ],
  [{ name: 'Block', layers: { LayerNorm: 2, Attention: 1, Mlp: 1, DropPath: 2 } }, 'transformer block'],
  [
    {
      name: 'EncoderLayer',
      layers: { 'nn.MultiheadAttention': 1, 'nn.Linear': 2, 'nn.LayerNorm': 2, 'nn.Dropout': 3 },
    },
    'transformer block',
  ],
  [{ name: 'Wrapper', layers: { 'nn.TransformerEncoderLayer': 1 } }, 'transformer block'],
  [{ name: 'Attention', layers: { 'nn.Linear': 2, 'nn.Dropout': 2 } }, 'attention'],
  [{ name: 'SEModule', layers: { Conv2d: 2, ReLU: 1, Sigmoid: 1 } }, 'attention'],
  [{ name: 'Mixer', layers: { 'nn.MultiheadAttention': 1 } }, 'attention'],
  [{ name: 'ConvBnAct', layers: { Conv2d: 1, BatchNorm2d: 1, ReLU: 1 } }, 'convolution'],
  [{ name: 'Bottleneck', layers: { 'nn.Conv2d': 3, 'nn.BatchNorm2d': 3, 'nn.ReLU': 1 } }, 'convolution'],
  [{ name: 'PatchEmbed', layers: { 'nn.Conv2d': 1, 'nn.LayerNorm': 1 } }, 'convolution'],
  [{ name: 'DropPath', layers: {} }, 'utility'],
  [{ name: 'Mlp', layers: { Linear: 2, GELU: 1, Dropout: 1 } }, 'utility'],
  [{ name: 'Identity' }, 'utility'],
  // position and token embeddings; a patch embedding (a strided convolution) stays one
  [{ name: 'RotaryEmbedding', layers: {} }, 'embedding'],
  [{ name: 'RotaryEmbeddingCat', layers: {} }, 'embedding'],
  [{ name: 'SinusoidalPosEmb' }, 'embedding'],
  [{ name: 'SinePositionalEncoding', layers: {} }, 'embedding'],
  [{ name: 'AlibiPositionalBias', layers: {} }, 'embedding'],
  [{ name: 'Tokens', layers: { 'nn.Embedding': 1 } }, 'embedding'],
  // wrappers: the constructor takes the module it applies, or a residual connection by name
  [{ name: 'Residual', initParams: ['fn'] }, 'wrapper'],
  [{ name: 'Residual', initParams: ['dim', 'scale_residual'], layers: {} }, 'wrapper'],
  [{ name: 'PreNorm', initParams: ['dim', 'fn'], layers: { 'nn.LayerNorm': 1 } }, 'wrapper'],
  [{ name: 'SkipConnection', layers: {} }, 'wrapper'],
  [{ name: 'ResidualBlock', layers: { 'nn.Conv2d': 2, 'nn.BatchNorm2d': 2 } }, 'convolution'],
  [{ name: 'ResidualBlock' }, 'convolution'],
  [{ name: 'ResLayer', initParams: ['block', 'num_blocks'], layers: { AvgPool2d: 1 } }, 'convolution'],
];

test('categories of typical blocks', () => {
  for (const [input, expected] of cases) {
    const r = categorize(input);
    assert.equal(r.category, expected, `${input.name}: got ${r.category} (${r.reason})`);
    assert.ok(r.reason.length > 0);
    assert.ok(CATEGORIES.includes(r.category));
  }
});

test('a block named like a layer is not an architecture, however many layers it has', () => {
  const r = categorize({ name: 'BigBlock', layers: { Attention: 1, Mlp: 1, LayerNorm: 2, Linear: 20, Conv2d: 4 } });
  assert.equal(r.category, 'transformer block');
  // layers decide when the name does not
  assert.equal(categorize({ name: 'Thing', layers: { Conv2d: 2, BatchNorm2d: 2 } }).category, 'convolution');
  assert.equal(categorize({ name: 'Thing', layers: { 'torch.nn.modules.conv.Conv2d': 1 } }).category, 'convolution');
});

test('region and neighbourhood reductions are pooling; stages and heads are not whole networks', () => {
  assert.equal(categorize({ name: 'MultiScaleRoIAlign', layers: {} }).category, 'pooling');
  assert.equal(categorize({ name: 'ROIAlignRotated' }).category, 'pooling');
  assert.equal(categorize({ name: 'MeanAggregation' }).category, 'pooling');
  const stage = {
    name: 'SwinStage',
    layers: { SwinBlock: 2, WindowAttention: 2, Mlp: 2, LayerNorm: 5, Linear: 10, PatchMerging: 1 },
  };
  assert.equal(categorize(stage).category, 'transformer block');
  assert.equal(
    categorize({
      name: 'ClsHead',
      layers: { Conv2d: 3, BatchNorm2d: 3, ReLU: 3, AdaptiveAvgPool2d: 1, Flatten: 1, Linear: 1 },
    }).category,
    'convolution',
  );
  assert.equal(categorize({ name: 'ResLayer', layers: { AvgPool2d: 1 } }).category, 'convolution');
});

test('a network named as one is an architecture even when its layers are not known', () => {
  // not built by validation, layers inherited from a base class
  assert.equal(
    categorize({ name: 'VisionTransformer', layers: {}, bases: ['timm.models.vision_transformer.VisionTransformer'] })
      .category,
    'architecture',
  );
  assert.equal(categorize({ name: 'ResidualBlock', layers: {} }).category, 'convolution');
});

test('the layers a block constructs are those of its own class body, not of the whole module', () => {
  const text = [
    'import torch.nn as nn',
    'class Head(nn.Module):',
    '    def __init__(self):',
    '        super().__init__()',
    '        self.fc = nn.Linear(8, 2)',
    '        self.a = nn.Linear(8, 8)',
    '',
    'class GPT(nn.Module):',
    '    def __init__(self, config):',
    '        super().__init__()',
    '        self.wte = nn.Embedding(10, 8)',
    '        self.head = Head()',
    '        self.ln = nn.LayerNorm(8)',
    '    def forward(self, idx, targets=None):',
    '        return self.head(self.ln(self.wte(idx)))',
    '',
  ].join('\n');
  assert.deepEqual(layerInventory(text, 'GPT'), { Embedding: 1, LayerNorm: 1, Head: 1 });
  assert.deepEqual(layerInventory(text, 'Head'), { Linear: 2 });
  // a model whose forward takes targets (it returns the loss too) is not a loss
  assert.notEqual(
    categorize({ name: 'GPT', layers: layerInventory(text, 'GPT'), forwardParams: ['idx', 'targets'] }).category,
    'loss',
  );
});
