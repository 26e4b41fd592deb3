// Category of a library block for its neutral spec: attention, convolution, transformer
// block, pooling, normalization, loss, architecture, embedding, wrapper or utility. Decided from what the block
// spec already knows — class name, docstring, base classes, the layer types its constructor
// creates (`layers`: type name → count, e.g. {Conv2d: 2, BatchNorm2d: 2}: those of the built
// instance when validation built one, else those its own class body constructs, see
// `layerInventory`) and the parameters
// of `forward` — by the ordered rules below; the first rule that fires wins, and the result
// carries the rule as its reason so the choice can be audited.
//
//  0. wrapper       the constructor takes the module it wraps (`fn`, `module`, `sublayer` …:
//                   Residual(fn), PreNorm(dim, fn)) and the block has no convolution /
//                   attention / transformer layer of its own and is not named a
//                   block/layer/stage
//  1. loss          name or a base ends in Loss / is a criterion (`_Loss`, `_WeightedLoss`),
//                   or forward takes a target/label and the block has at most one layer
//  2. normalization name or a base is a norm (LayerNorm, RMSNorm, `_BatchNorm`, `_NormBase`, …)
//                   and the block has no convolution / attention / linear layers of its own
//  3. pooling       name says Pool/Pooling/GeM/SPP/RoIAlign/RoIPool/Aggregation, or every layer
//                   is a pooling layer (and it is not named a block, layer or stage)
//  4. architecture  a whole network: name says Net/Model/ResNet/ViT/…Former/Classifier/
//                   Backbone/Encoder-Decoder (however many layers are known: it may not have
//                   been built, or inherit them), not being named …Block/Layer/Stage, or it has ≥ 12 layers of
//                   ≥ 4 kinds ending in a Linear head (a classifier, not a …Head), or the docstring calls
//                   it a model/network/architecture and it has ≥ 8 layers
//  4b. embedding   a position or token embedding: the name says Embedding/Embed/Emb,
//                   Positional/PositionEncoding, Rotary/RoPE, Sinusoidal or ALiBi, or every
//                   layer is an nn.Embedding — and it has no convolution / attention /
//                   transformer layer (a patch embedding is a strided convolution)
//  5. transformer block  it contains a Transformer(Encoder|Decoder)Layer, or it is named
//                   Block/Layer/Stage/Encoder/Decoder and has attention plus an MLP (≥ 2 Linear or
//                   an Mlp/FeedForward layer) or a LayerNorm
//  6. attention     name says Attention/Attn/MHSA/SE/Squeeze-Excitation/CBAM/NonLocal, or it
//                   has a MultiheadAttention / *Attention layer
//  6b. wrapper     a residual or skip connection by name (Residual, ResidualAdd, Skip,
//                   Shortcut, …Wrapper) with no convolution / attention layer of its own
//  7. convolution   name says Conv/Bottleneck/BasicBlock/ResBlock/Inverted Residual/Depthwise,
//                   or convolutions are its most frequent parameterised layer
//  8. utility       everything else (activations, DropPath, Identity, reshapes, embeddings …)

import type { BlockCategory } from '../records/spec.js';

/** The source text of top-level class `name` in a module: its line to the next top-level statement. */
export function classSegment(text: string, name: string): string {
  const re = new RegExp(`^class\\s+${name.replace(/[^\w]/g, '')}\\b`, 'm');
  const m = re.exec(text);
  if (!m) return '';
  const rest = text.slice(m.index);
  const lines = rest.split('\n');
  let end = 1;
  for (; end < lines.length; end++) {
    const l = lines[end];
    if (l.length && !/^[\s#)\]}]/.test(l)) break;
  }
  return lines.slice(0, end).join('\n');
}

/** Layer types the class's own code constructs (`nn.Conv2d(`, `torch.nn.LayerNorm(`, and
 *  classes of the same module such as `Attention(dim)`), for a block that validation could
 *  not build: the closure's other classes construct layers of their own, which are not
 *  this block's. */
export function layerInventory(text: string, className: string): Record<string, number> {
  const out: Record<string, number> = {};
  const seg = classSegment(text, className) || text;
  for (const m of seg.matchAll(/\bnn\.([A-Z]\w*)\s*\(/g)) out[m[1]] = (out[m[1]] ?? 0) + 1;
  const classes = new Set([...text.matchAll(/^class\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]));
  classes.delete(className);
  for (const m of seg.matchAll(/(?<![\w.])([A-Z]\w*)\s*\(/g)) {
    if (classes.has(m[1]) && !/^\s*class\s/.test(seg.slice(seg.lastIndexOf('\n', m.index) + 1, m.index + 1)))
      out[m[1]] = (out[m[1]] ?? 0) + 1;
  }
  return out;
}

export type Category = BlockCategory;

export const CATEGORIES: readonly Category[] = [
  'attention',
  'convolution',
  'transformer block',
  'pooling',
  'normalization',
  'loss',
  'architecture',
  'embedding',
  'wrapper',
  'utility',
];

export interface CategoryInput {
  name: string;
  docstring?: string | null;
  /** layer type → number of instances created by the block (qualified or bare names) */
  layers?: Record<string, number>;
  /** base class expressions as written (`nn.Module`, `torch.nn.modules.loss._Loss`) */
  bases?: string[];
  /** parameter names of forward, without self */
  forwardParams?: string[];
  /** parameter names of __init__, without self */
  initParams?: string[];
}

export interface CategoryResult {
  category: Category;
  /** the rule that decided it */
  reason: string;
}

const bare = (s: string) => s.split('.').pop()!.replace(/\[.*$/, '').trim();

const IS = {
  conv: (t: string) =>
    /^(Lazy)?Conv(Transpose)?[123]d$|Conv(2d|Bn|BN|Norm|Act)|^Conv$|ConvModule|DepthwiseSeparable|SeparableConv/.test(
      t,
    ),
  attention: (t: string) => /MultiheadAttention|Attention|Attn|MHSA|MSA$|MHA$/.test(t),
  norm: (t: string) =>
    /Norm(\dd)?$|^(Batch|Layer|Group|Instance|RMS|LocalResponse)Norm|^_?NormBase$|^_BatchNorm$|^FrozenBatchNorm/.test(
      t,
    ),
  pool: (t: string) => /Pool(\dd)?$|Pooling|^GeM$/.test(t),
  linear: (t: string) => /^(Lazy)?Linear$|^Bilinear$|^NonDynamicallyQuantizableLinear$/.test(t),
  mlp: (t: string) => /Mlp|MLP|FeedForward|FFN|^FF$/.test(t),
  transformerLayer: (t: string) => /Transformer(Encoder|Decoder)Layer$|TransformerBlock/.test(t),
  loss: (t: string) => /Loss$|^_Loss$|^_WeightedLoss$|Criterion$/.test(t),
};

/** Names of a position or token embedding: Embedding / Embed / Emb as a word of the name
 *  (`RotaryEmbeddingCat`, `SinusoidalPosEmb`, `TimestepEmbedder`), positional encodings,
 *  rotary, sinusoidal and ALiBi position terms. */
const EMBEDDING =
  /Embed(ding|der)?s?(?![a-z])|Emb(?![a-z])|Positional|Position(Encoding|Embedding|Bias)|Rotary|RoPE|Sinusoidal|Alibi|ALiBi/;

/** Names of a part of a network (a block, layer or stage of it), never the whole network. */
const PART = /(Block|Layer|Stage)$/;

/** Non-parameterised helpers that do not make a block "convolutional" etc. */
const PASSIVE =
  /^(ReLU|ReLU6|GELU|SiLU|Swish|Mish|Sigmoid|Tanh|Hardswish|Hardsigmoid|LeakyReLU|PReLU|ELU|SELU|Softmax|LogSoftmax|Dropout\dd?|Dropout|DropPath|Identity|Flatten|Unflatten|Sequential|ModuleList|ModuleDict|ParameterList|Upsample|PixelShuffle)$/;

export function categorize(input: CategoryInput): CategoryResult {
  const name = input.name;
  const doc = input.docstring ?? '';
  const bases = (input.bases ?? []).map(bare);
  const params = (input.forwardParams ?? []).filter((p) => p !== 'self');
  const layers = Object.entries(input.layers ?? {}).map(([t, n]) => [bare(t), n] as const);
  const count = (pred: (t: string) => boolean) => layers.reduce((a, [t, n]) => a + (pred(t) ? n : 0), 0);
  const total = layers.reduce((a, [, n]) => a + n, 0);
  const active = layers.filter(([t]) => !PASSIVE.test(t));
  const kinds = new Set(active.map(([t]) => t)).size;
  const nConv = count(IS.conv);
  const nAttn = count(IS.attention);
  const nNorm = count(IS.norm);
  const nPool = count(IS.pool);
  const nLinear = count(IS.linear);
  const nMlp = count(IS.mlp);
  const nTLayer = count(IS.transformerLayer);
  const r = (category: Category, reason: string): CategoryResult => ({ category, reason });

  const structural = nConv + nAttn + nTLayer;
  // 0. wrapper: a module taking the module it applies (the names PyTorch code gives such an
  // argument), e.g. a residual connection `x + fn(x)` or a pre-norm `fn(norm(x))`
  const wrapped = (input.initParams ?? []).find((p) =>
    /^(fn|func|function|module|sublayer|sub_layer|wrapped|inner|body)$/.test(p),
  );
  if (wrapped && structural === 0 && !PART.test(name) && !/Loss/.test(name))
    return r('wrapper', `the constructor takes the module it wraps (${wrapped})`);
  // 1. loss
  if (/Loss$|Loss[A-Z0-9_]|Criterion/.test(name)) return r('loss', `name ${name} is a loss`);
  const lossBase = bases.find(IS.loss);
  if (lossBase) return r('loss', `base ${lossBase} is a loss`);
  if (
    params.some((p) => /^(target|targets|label|labels|gt|y_true|ground_truth)$/.test(p)) &&
    active.length <= 1 &&
    total <= 1
  ) {
    return r('loss', `forward takes a target (${params.join(', ')}) and the block has no layers`);
  }
  // 2. normalization
  const own = nConv + nAttn + nLinear + nMlp + nTLayer;
  const normBase = bases.find(IS.norm);
  if (normBase && own === 0) return r('normalization', `base ${normBase} is a normalization layer`);
  if (/Norm(alization|alize)?(\dd)?$|^(RMS|Layer|Batch|Group)Norm|Normali[sz]/.test(name) && own === 0) {
    return r('normalization', `name ${name} is a normalization`);
  }
  // 3. pooling
  // RoI align/pool and graph aggregations reduce a region or a neighbourhood to one value
  if (
    /[Pp]ool(ing)?(\dd)?$|Pool[A-Z]|^GeM|SPP(F)?$|^SpatialPyramid|R[Oo]I(Align|Pool)|Aggregation$|Pooler$/.test(name) &&
    nConv + nAttn + nTLayer <= 2
  ) {
    return r('pooling', `name ${name} is a pooling`);
  }
  if (active.length > 0 && active.every(([t]) => IS.pool(t)) && !PART.test(name))
    return r('pooling', 'every layer is a pooling layer');
  // 4. architecture
  const archName =
    /(Net|Nets|Model|ResNe[XS]?t|VGG|ViT|Former|Transformer|Classifier|Backbone|EncoderDecoder|Detector|Segmenter|UNet|GAN|Generator|Discriminator)(V?\d+[a-z]?|_.*)?$/;
  // a network named as one; with no known layers (not built, layers inherited) the name alone
  if (archName.test(name) && !PART.test(name)) {
    return r('architecture', `name ${name} names a network`);
  }
  const lastLinear = layers.length > 0 && IS.linear(layers[layers.length - 1][0]);
  if (total >= 12 && kinds >= 4 && (lastLinear || nLinear > 0) && !PART.test(name) && !/Head$/.test(name)) {
    return r('architecture', `${total} layers of ${kinds} kinds with a Linear head`);
  }
  if (/\b(model|network|architecture|backbone)\b/i.test(doc) && total >= 8 && !PART.test(name)) {
    return r('architecture', 'the docstring describes a model and it has ≥ 8 layers');
  }
  // 4b. embedding
  if (EMBEDDING.test(name) && structural === 0) return r('embedding', `name ${name} is an embedding`);
  if (active.length > 0 && active.every(([t]) => /^Embedding(Bag)?$/.test(t)) && structural === 0)
    return r('embedding', 'every layer is an embedding table');
  // 5. transformer block
  if (nTLayer > 0) return r('transformer block', 'it contains a transformer layer');
  if (
    nAttn > 0 &&
    (nMlp > 0 || nLinear >= 2 || nNorm > 0) &&
    /Block|Layer|Stage|Encoder|Decoder|Transformer/.test(name)
  ) {
    return r(
      'transformer block',
      `${name} combines attention with ${nMlp > 0 ? 'an MLP' : nLinear >= 2 ? 'linear layers' : 'normalization'}`,
    );
  }
  // 6. attention
  if (/Attention|Attn|MHSA|MultiHead|SqueezeExcit|^SE(Block|Module|Layer)?$|^SE[A-Z]|CBAM|NonLocal|^ECA/.test(name)) {
    return r('attention', `name ${name} is an attention mechanism`);
  }
  if (nAttn > 0) return r('attention', 'it has an attention layer');
  // 6b. wrapper by name: a residual / skip connection
  if (
    /^(Residual|Skip|Shortcut)(Add|Connection|Wrapper)?\d*$|^(Residual|Skip)$|Wrapper$/.test(name) &&
    nConv === 0 &&
    nAttn === 0 &&
    nTLayer === 0
  ) {
    return r('wrapper', `name ${name} is a residual connection or wrapper`);
  }
  // 7. convolution
  if (
    /Conv(?!ert)|Bottleneck|BasicBlock|ResBlock|ResidualBlock|^Res(Layer|Stage|Unit)|InvertedResidual|Depthwise|DepthWise|MBConv|Stem$/.test(
      name,
    ) &&
    nAttn === 0
  ) {
    return r('convolution', `name ${name} is a convolutional block`);
  }
  if (nConv > 0 && nConv >= nLinear && nConv >= nNorm && nConv >= nPool) {
    return r('convolution', `convolutions are its main layers (${nConv})`);
  }
  // 8. utility
  return r('utility', total === 0 ? 'no layers of its own' : 'no rule above applies');
}
