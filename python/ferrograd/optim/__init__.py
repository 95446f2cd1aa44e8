"""torch.optim's SGD, Adam, AdamW, RMSprop and Adagrad. The classes keep
torch's parameter groups and per-parameter state; each step hands a group
to its Rust update rule (`_C._optim`, stated in `src/optim`)."""

from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
