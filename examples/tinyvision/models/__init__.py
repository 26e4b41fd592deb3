"""tinyvision.models: re-exports of the model blocks (one level of a two-level re-export chain)."""
from .mixer import Block as MixerBlock
from .mixer import LinearHead, MixerConfig
from .resnet import Bottleneck
from .variants import ResBottleneck

__all__ = ['Bottleneck', 'LinearHead', 'MixerBlock', 'MixerConfig', 'ResBottleneck']
