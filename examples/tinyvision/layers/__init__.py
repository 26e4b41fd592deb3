"""tinyvision.layers: re-exports of the layer modules.

Demonstrates: a star import (``from .activations import *`` honouring the
``__all__`` of activations.py) and plain re-exports with a literal ``__all__``.
"""
from .activations import *
from .attention import Attention, Block, WindowAttention
from .conv import ConvBnAct
from .helpers import make_divisible, to_2tuple, trunc_normal_
from .mlp import Mlp

__all__ = [
    'Attention', 'Block', 'ConvBnAct', 'GELUTanh', 'HardSigmoid', 'Mlp', 'WindowAttention',
    'get_act_layer', 'make_divisible', 'to_2tuple', 'trunc_normal_',
]
