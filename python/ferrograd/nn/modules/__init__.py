from .activation import (
    GELU,
    Dropout,
    Flatten,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .container import ModuleDict, ModuleList, ParameterList, Sequential
from .linear import Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module

__all__ = [
    "Module",
    "Identity",
    "Linear",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ReLU",
    "Tanh",
    "Sigmoid",
    "SiLU",
    "GELU",
    "Softplus",
    "Softmax",
    "LogSoftmax",
    "Dropout",
    "Flatten",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "NLLLoss",
    "CrossEntropyLoss",
]
