"""Convolution + batch norm + activation.

Demonstrates: a registry decorator from another module, an annotation that
references a helper type alias (evaluated eagerly: no ``from __future__
import annotations`` here), and a helper shared with other blocks.
"""
import torch.nn as nn

from ..registry import register_block
from .helpers import _int_or_tuple_2_t, to_2tuple


@register_block
class ConvBnAct(nn.Module):
    """Conv2d -> BatchNorm2d -> activation, with 'same' padding for odd kernels."""

    def __init__(
            self,
            in_chs: int = 3,
            out_chs: int = 16,
            kernel_size: _int_or_tuple_2_t = 3,
            stride: _int_or_tuple_2_t = 1,
            act_layer=nn.ReLU,
    ):
        super().__init__()
        kernel_size = to_2tuple(kernel_size)
        padding = tuple(k // 2 for k in kernel_size)
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride=to_2tuple(stride), padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        self.act = act_layer() if act_layer is not None else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))
