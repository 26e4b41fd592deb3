// Search relevance on a real library: a small judged set of queries, each with the class
// names a person typing it expects to see (any repository's block of that name counts),
// run against a store built by `nnrag extract` over real repositories (e.g. the
// reference corpus: timm, torchvision, detectron2, …). Prints per query the rank of the
// first expected block, then MRR (mean reciprocal rank, 0 when none in the first 20) and
// recall@5 (share of queries with an expected block in the first 5).
//
// The judgements are written down here, before looking at results, from what the words
// mean in the field; they name classes, not ids, so they do not depend on which
// repositories are indexed, only on some repository defining a class of that name.
//
// Run twice: as `nnrag search` does by default (blocks that failed validation left out)
// and with `--all` (every block), since a judged block may have failed validation.
//
// usage: node dist/bench/search-relevance.js STORE [--quiet]
import { IndexStore } from '../src/store/store.js';
import { refreshSearch } from '../src/search/refresh.js';
import { searchBlocks } from '../src/search/fts.js';
import { args } from './args.js';

export const JUDGED: { q: string; expect: string[] }[] = [
  { q: 'patch embedding', expect: ['PatchEmbed', 'PatchEmbedding', 'PatchEmbed3D'] },
  { q: 'patch embed', expect: ['PatchEmbed', 'PatchEmbedding'] },
  { q: 'layer norm', expect: ['LayerNorm', 'LayerNorm2d', 'LayerNormChannelsLast', 'ChanLayerNorm'] },
  { q: 'layer normalization', expect: ['LayerNorm', 'LayerNorm2d', 'ChanLayerNorm'] },
  { q: 'window attention', expect: ['WindowAttention', 'WindowAttention3D'] },
  { q: 'shifted window transformer block', expect: ['SwinTransformerBlock', 'SwinTransformerV2Block', 'SwinBlock'] },
  { q: 'squeeze excitation', expect: ['SqueezeExcitation', 'SqueezeExcite', 'SEModule', 'SELayer', 'SE'] },
  { q: 'squeeze and excite', expect: ['SqueezeExcitation', 'SqueezeExcite', 'SEModule', 'SELayer'] },
  { q: 'drop path', expect: ['DropPath'] },
  { q: 'stochastic depth', expect: ['DropPath', 'StochasticDepth'] },
  { q: 'bottleneck', expect: ['Bottleneck'] },
  { q: 'residual bottleneck', expect: ['Bottleneck', 'BottleneckBlock', 'ResBottleneck'] },
  { q: 'basic block', expect: ['BasicBlock'] },
  { q: 'inverted residual', expect: ['InvertedResidual', 'InvertedResidualBlock'] },
  {
    q: 'depthwise separable convolution',
    expect: ['DepthwiseSeparableConv', 'SeparableConv2d', 'DepthwiseSeparableConv2d'],
  },
  { q: 'multi head attention', expect: ['MultiheadAttention', 'MultiHeadAttention', 'Attention'] },
  { q: 'self attention', expect: ['Attention', 'SelfAttention', 'MultiHeadSelfAttention'] },
  { q: 'mlp', expect: ['Mlp', 'MLP'] },
  { q: 'feed forward', expect: ['FeedForward', 'FFN', 'Mlp'] },
  { q: 'gated mlp', expect: ['GatedMlp', 'GluMlp', 'SwiGLU'] },
  {
    q: 'conv bn relu',
    expect: ['ConvBnAct', 'ConvNormAct', 'ConvBNReLU', 'Conv2dNormActivation', 'ConvModule', 'Conv'],
  },
  {
    q: 'convolution batch norm activation',
    expect: ['ConvBnAct', 'ConvNormAct', 'Conv2dNormActivation', 'ConvModule', 'Conv'],
  },
  { q: 'same padding conv', expect: ['Conv2dSame', 'StdConv2dSame'] },
  { q: 'spatial pyramid pooling', expect: ['SPP', 'SPPF', 'ASPP', 'SPPCSPC', 'SPPELAN'] },
  { q: 'atrous spatial pyramid', expect: ['ASPP'] },
  { q: 'feature pyramid network', expect: ['FPN', 'FeaturePyramidNetwork'] },
  { q: 'channel attention', expect: ['ChannelAttention', 'CbamModule', 'EcaModule', 'ChannelAttn'] },
  {
    q: 'positional embedding',
    expect: ['PositionalEncoding', 'PositionEmbeddingSine', 'PositionEmbeddingRandom', 'RotaryEmbedding', 'PosEmbed'],
  },
  { q: 'relative position bias', expect: ['RelativePositionBias', 'RelPosBias'] },
  { q: 'global context', expect: ['GlobalContext', 'GCBlock', 'ContextBlock'] },
  { q: 'vision transformer', expect: ['VisionTransformer'] },
  { q: 'mask decoder', expect: ['MaskDecoder'] },
  { q: 'group norm', expect: ['GroupNorm', 'GroupNorm1', 'GroupNormAct'] },
  { q: 'batchnorm activation', expect: ['BatchNormAct2d'] },
  { q: 'anti aliased downsample', expect: ['BlurPool2d', 'AntiAliasDownsampleLayer'] },
];

const store = args[0];
if (!store) {
  console.error('usage: node dist/bench/search-relevance.js STORE');
  process.exit(2);
}
const s = IndexStore.open(store);
refreshSearch(s);
function run(all: boolean): void {
  let rr = 0;
  let at5 = 0;
  for (const { q, expect } of JUDGED) {
    const res = searchBlocks(s, q, { limit: 20, all });
    const names = res.hits.map((h) => h.name);
    const rank = names.findIndex((n) => expect.includes(n)) + 1;
    if (rank > 0) rr += 1 / rank;
    if (rank > 0 && rank <= 5) at5++;
    if (!args.includes('--quiet'))
      console.log(`${rank ? String(rank).padStart(2) : ' -'}  ${q.padEnd(36)} ${names.slice(0, 3).join(', ')}`);
  }
  console.log(
    `${all ? 'every block     ' : 'default (no failed)'}: MRR ${(rr / JUDGED.length).toFixed(3)}  recall@5 ${((100 * at5) / JUDGED.length).toFixed(0)}%  (${JUDGED.length} judged queries)`,
  );
}
run(false);
run(true);
s.close();
