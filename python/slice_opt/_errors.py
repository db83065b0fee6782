"""The exceptions of slice_opt. Every error the library reports is a :class:`Error`."""

from typing import Optional


class Error(Exception):
    """A slice-opt error.

    Attributes:
        message: the full message (also ``str(error)``).
        file: the model file concerned, when known.
        node: the node concerned, when known.
        op: the node's op type (or, for :class:`PassError`, the pass), when known.
        input: the index of the node input concerned, when known.
    """

    def __init__(
        self,
        message: str,
        file: Optional[str] = None,
        node: Optional[str] = None,
        op: Optional[str] = None,
        input: Optional[int] = None,
    ):
        super().__init__(message)
        self.message = message
        self.file = file
        self.node = node
        self.op = op
        self.input = input


class InputError(Error):
    """The model could not be read (not a model, corrupt, a malformed node), or a file could not
    be written. The command line exits 2 on these."""


class SliceError(Error):
    """A slice node has parameters the semantics core refuses."""


class PassError(Error):
    """A pass refused to do something; ``op`` names the pass."""


class UsageError(Error):
    """A bad argument: an unknown pass, an unsupported combination."""


class VerificationError(Error):
    """``verify=`` found an output of the result that differs from the original's."""
