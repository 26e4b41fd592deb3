"""Bottleneck variants.

Demonstrates: inheritance across modules through an absolute import
(``ResBottleneck(Bottleneck)``), and a block that inherits ``forward`` from its
base without defining its own.
"""
import torch.nn as nn

from tinyvision.models.resnet import Bottleneck


class ResBottleneck(Bottleneck):
    """Bottleneck whose last BatchNorm starts at zero, so the block starts as the identity."""

    def __init__(self, in_chs=64, out_chs=64, stride=1, **kwargs):
        super().__init__(in_chs, out_chs, stride, **kwargs)
        nn.init.zeros_(self.conv3.bn.weight)
