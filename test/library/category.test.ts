// Categories of small, typical blocks (shapes taken from common PyTorch code: timm's
// Attention/Block/Mlp/SEModule, torchvision's ResNet/Bottleneck, losses).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { categorize, CATEGORIES, type CategoryInput } from '../../src/library/category.js';

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
  [{ name: 'ResNet', layers: { 'nn.Conv2d': 53, 'nn.BatchNorm2d': 53, 'nn.ReLU': 1, 'nn.MaxPool2d': 1, 'nn.AdaptiveAvgPool2d': 1, 'nn.Linear': 1 } }, 'architecture'],
  [{ name: 'VisionTransformer', layers: { PatchEmbed: 1, Block: 12, LayerNorm: 1, Linear: 1 } }, 'architecture'],
  [{ name: 'Tiny', docstring: 'A small classification model.', layers: { Conv2d: 4, BatchNorm2d: 3, ReLU: 1, Linear: 1 } }, 'architecture'],
  [{ name: 'Block', layers: { LayerNorm: 2, Attention: 1, Mlp: 1, DropPath: 2 } }, 'transformer block'],
  [{ name: 'EncoderLayer', layers: { 'nn.MultiheadAttention': 1, 'nn.Linear': 2, 'nn.LayerNorm': 2, 'nn.Dropout': 3 } }, 'transformer block'],
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
