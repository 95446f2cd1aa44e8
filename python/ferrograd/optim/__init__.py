"""torch.optim's SGD, Adam and AdamW. The classes keep torch's parameter
groups and per-parameter state; each step hands a group to the Rust update
rules (`_C._optim`, stated in `src/optim`)."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
