"""Bottleneck residual block.

Demonstrates: a base class from the second package (``tinybase.module.BaseModule``),
a dependency used only as a default argument (``conv_layer=ConvBnAct``), a
class attribute referencing a module constant (``expansion = EXPANSION``), a
module imported under an alias and used as ``helpers.make_divisible``, and a
relative import through a package re-export (``from ..layers import ConvBnAct``).
"""
import torch.nn as nn

import tinyvision.layers.helpers as helpers
from tinybase.module import BaseModule

from ..layers import ConvBnAct
from ..registry import register_block

EXPANSION = 4


@register_block
class Bottleneck(BaseModule):
    """1x1 reduce -> 3x3 -> 1x1 expand, with a projection shortcut when the shape changes."""

    expansion = EXPANSION

    def __init__(self, in_chs=64, out_chs=64, stride=1, conv_layer=ConvBnAct):
        super().__init__()
        mid_chs = helpers.make_divisible(out_chs / self.expansion)
        self.conv1 = conv_layer(in_chs, mid_chs, 1)
        self.conv2 = conv_layer(mid_chs, mid_chs, 3, stride)
        self.conv3 = conv_layer(mid_chs, out_chs, 1, act_layer=None)
        if stride != 1 or in_chs != out_chs:
            self.shortcut = conv_layer(in_chs, out_chs, 1, stride, act_layer=None)
        else:
            self.shortcut = nn.Identity()
        self.act = nn.ReLU(inplace=True)
        self.init_weights()

    def forward(self, x):
        shortcut = self.shortcut(x)
        x = self.conv3(self.conv2(self.conv1(x)))
        return self.act(x + shortcut)
