"""tinyvision: the main package of the example corpus.

Demonstrates: ``__init__.py`` re-exports with a literal ``__all__``, and the
second level of a re-export chain (``from tinyvision import Bottleneck`` goes
through ``tinyvision.models`` to ``tinyvision.models.resnet``).
"""
from .layers import Attention, ConvBnAct, Mlp, WindowAttention
from .models import Bottleneck, LinearHead, MixerBlock, MixerConfig, ResBottleneck
from .registry import get_block, list_blocks, register_block

__all__ = [
    'Attention', 'Bottleneck', 'ConvBnAct', 'LinearHead', 'MixerBlock', 'MixerConfig', 'Mlp',
    'ResBottleneck', 'WindowAttention', 'get_block', 'list_blocks', 'register_block',
]
