"""mlacheck from Python: gate an MLA attention kernel with mlacheck's operator cases and whole-model
suites. Two routes:

In process, through libmlacheck (the C library, ctypes; see README.md for where it is looked for):

    for case in mlacheck.op_cases("ops-full", supports=my_supports):
        if case.skip_reason: continue                 # declined: said so, never silently
        out, lse = my_kernel(case.torch("cuda"))      # or numpy: case.inputs, case.kv_cache_f32()
        print(case.judge(out, lse))                   # `mlacheck ops`'s judging: PASS / FAIL tensor metric
    r = mlacheck.run(suite="ci", mqa=my_forward_mqa)  # the reference model with my attention
    pytest --mlacheck-suite ops-smoke --mlacheck-op mymodule:ops   # one test per case

Without the C library on the kernel's machine (numpy + h5py only):

    mlacheck ops --export DIR          # on a machine with mlacheck built
    for case in mlacheck.exported_cases(DIR):   # on the kernel's machine
        out, lse = my_kernel(case)               # case.inputs, case.kv_cache_f32(), case.softmax_scale
        case.write_output(out, lse)              # or case.skip("reason")
    mlacheck ops --judge DIR           # the same judging as `mlacheck ops`; exit 0 pass, 1 fail, 2 bad input
"""
from ._errors import CaseError
from .formats import bf16_to_f32, e4m3_to_f32, kv_rows_to_f32


def __getattr__(name):
    # the export route needs h5py, the libmlacheck route does not: each loads on first use
    if name in ("ExportedCase", "export_suite", "exported_cases"):
        from . import export
        return getattr(export, name)
    # the libmlacheck route loads lazily: the export route needs no C library
    if name in ("op_cases", "check_ops", "OpCase", "OpSuite", "Verdict", "JudgeFailure", "supports_fn"):
        from . import cases
        return getattr(cases, name)
    if name in ("run", "RunResult", "OpCall"):
        from . import wholemodel
        return getattr(wholemodel, name)
    if name in ("LibraryError", "CapiError", "library_path"):
        from . import _lib
        return getattr(_lib, name)
    raise AttributeError(f"module 'mlacheck' has no attribute {name!r}")


__all__ = ["CaseError", "ExportedCase", "export_suite", "exported_cases", "bf16_to_f32", "e4m3_to_f32",
           "kv_rows_to_f32", "op_cases", "check_ops", "OpCase", "OpSuite", "Verdict", "JudgeFailure", "supports_fn",
           "run", "RunResult", "OpCall", "LibraryError", "CapiError", "library_path"]
__version__ = "0.2.0"
