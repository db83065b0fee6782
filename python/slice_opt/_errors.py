"""The exceptions of slice_opt. Every error the package raises is a :class:`SliceOptError`."""

from typing import Optional


class SliceOptError(Exception):
    """A slice-opt error: the one exception type of the package (catch it to catch them all;
    the subclasses say which kind).

    Attributes:
        message: the full message (also ``str(error)``).
        file: the model file concerned (``"model.onnx"`` for a model given as ``bytes`` or
            ``ModelProto``), when known.
        node: the node concerned (its path for a node inside an ``If``/``Loop`` body), when
            known.
        op: the node's op type (or, for :class:`PassError`, the pass), when known.
        input: the index of the node input concerned, when known (a dangling input, the
            ``steps`` of a Slice with a zero step...).
    """

    def __init__(
        self,
        message: str,
        file: Optional[str] = None,
        node: Optional[str] = None,
        op: Optional[str] = None,
        input: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.node = node
        self.op = op
        self.input = input


#: The name this exception had first; the same class.
Error = SliceOptError


class InputError(SliceOptError):
    """The model could not be read (not a model, corrupt, a malformed node), or a file could not
    be read or written (also a refused one: an output that is an input, external data outside
    the model's directory), or ``dims=``/``input_shapes=`` do not fit the model (a symbol or
    input it does not have, a size against a static dim, a rank mismatch). The command line
    exits 2 on these."""


class SliceError(SliceOptError):
    """A slice node has parameters the semantics core refuses."""


class PassError(SliceOptError):
    """A pass refused to do something; ``op`` names the pass."""


class UsageError(SliceOptError):
    """A bad argument: an unknown pass, an assumption, ``dims=`` or ``input_shapes=`` value that
    does not read, an unsupported combination."""


class VerificationError(SliceOptError):
    """``verify=`` found an output of the result that differs from the original's."""
