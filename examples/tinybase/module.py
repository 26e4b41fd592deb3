"""Base classes shared by tinyvision blocks.

Demonstrates: a base ``nn.Module`` subclass living in another package
(``BaseModule``), an abstract base with an ``abstractmethod`` (``BaseHead``,
not a block: not concrete), ``@property`` and a plain helper class that is
not an ``nn.Module`` (``FeatureInfo``).
"""
from abc import ABC, abstractmethod

import torch.nn as nn


class BaseModule(nn.Module):
    """An ``nn.Module`` with a weight-initialisation hook and a parameter count.

    It defines no ``forward`` of its own, so it is a base class, not a block.
    """

    def init_weights(self):
        """Initialise linear and conv weights with a small normal distribution."""
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d, nn.Conv1d)):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    @property
    def num_params(self):
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


class BaseHead(BaseModule, ABC):
    """Abstract classification head: subclasses implement ``pre_logits``."""

    def __init__(self, in_features, num_classes=10):
        super().__init__()
        self.fc = nn.Linear(in_features, num_classes)

    @abstractmethod
    def pre_logits(self, x):
        """Pool features to ``(batch, in_features)``."""

    def forward(self, x):
        return self.fc(self.pre_logits(x))


class FeatureInfo:
    """Plain record of the channels and reduction of a feature map (not an nn.Module)."""

    def __init__(self, num_chs, reduction=1, module=''):
        self.num_chs = num_chs
        self.reduction = reduction
        self.module = module

    def __repr__(self):
        return f'FeatureInfo(num_chs={self.num_chs}, reduction={self.reduction}, module={self.module!r})'
