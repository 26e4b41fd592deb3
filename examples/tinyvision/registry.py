"""Block registry: ``@register_block`` records a class in a dict and returns it unchanged."""

_BLOCK_REGISTRY = {}


def register_block(cls):
    """Class decorator: record ``cls`` under its name and return it."""
    _BLOCK_REGISTRY[cls.__name__] = cls
    return cls


def get_block(name):
    """Return the block class registered under ``name``."""
    return _BLOCK_REGISTRY[name]


def list_blocks():
    """Names of all registered blocks, sorted."""
    return sorted(_BLOCK_REGISTRY)
