"""The package's input / output error, shared by the export route (export.py, which needs h5py) and
the libmlacheck route (cases.py, wholemodel.py, which do not)."""


class CaseError(ValueError):
    """Bad input or output of an operator case; the message names the case, the tensor and what
    was expected."""
