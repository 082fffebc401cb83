"""toolshim, the reference normaliser: ``toolcall300.toolshim:normalise`` is its adapter entry."""

from toolcall300.toolshim.pipeline import normalise, normalise_explained

__all__ = ["normalise", "normalise_explained"]
