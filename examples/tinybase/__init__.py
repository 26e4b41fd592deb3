"""tinybase: the second package of the example corpus (base classes used by tinyvision)."""
from .module import BaseHead, BaseModule, FeatureInfo

__all__ = ['BaseHead', 'BaseModule', 'FeatureInfo']
