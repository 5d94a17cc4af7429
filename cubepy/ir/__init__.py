"""The typed, structured IR: nodes, builder, printer, verifier and passes."""

from .builder import Builder
from .nodes import Block, Buffer, Const, Kernel, Op, ScalarParam, SourceLoc, Value, Var, walk
from .printer import print_kernel
from .types import DType, Type
from .verify import VerifyError, verify

__all__ = ["Block", "Buffer", "Builder", "Const", "DType", "Kernel", "Op", "ScalarParam",
           "SourceLoc", "Type", "Value", "Var", "VerifyError", "print_kernel", "verify", "walk"]
