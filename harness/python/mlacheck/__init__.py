"""mlacheck from Python: the operator cases of `mlacheck ops` without the C library.

    mlacheck ops --export DIR          # on a machine with mlacheck built
    for case in mlacheck.exported_cases(DIR):   # on the kernel's machine: numpy + h5py only
        out, lse = my_kernel(case)               # case.inputs, case.kv_cache_f32(), case.softmax_scale
        case.write_output(out, lse)              # or case.skip("reason")
    mlacheck ops --judge DIR           # the same judging as `mlacheck ops`; exit 0 pass, 1 fail, 2 bad input
"""
from .export import CaseError, ExportedCase, export_suite, exported_cases
from .formats import bf16_to_f32, e4m3_to_f32, kv_rows_to_f32

__all__ = ["CaseError", "ExportedCase", "export_suite", "exported_cases", "bf16_to_f32", "e4m3_to_f32",
           "kv_rows_to_f32"]
__version__ = "0.1.0"
