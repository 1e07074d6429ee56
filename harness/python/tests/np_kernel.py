"""The numpy MLA operator (examples/numpy_mla_ops.py) as a kernel object for the pytest plugin's
test (--mlacheck-op np_kernel:ops): mqa and mha, fp8_ds_mla declined (to show skips with reasons),
and $NP_KERNEL_SCALE_ERROR planting a relative softmax-scale error in mha."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import numpy_mla_ops as npo  # noqa: E402

_ERR = float(os.environ.get("NP_KERNEL_SCALE_ERROR", "0"))


class ops:
    name = "numpy"
    supports = {"kv_format": {"bf16", "fp8", "f32"}}

    @staticmethod
    def mqa(case):
        return npo.forward_mqa(case, case.softmax_scale)

    @staticmethod
    def mha(case):
        return npo.forward_mha(case, case.softmax_scale * (1.0 + _ERR))
