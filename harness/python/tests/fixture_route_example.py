"""The pytest plugin's fixture route, as a backend's own test file would use it (run by
pytest_plugin_checks.py with -p mlacheck.pytest_plugin; named so that pytest does not collect it
unasked, since it needs the plugin)."""
import np_kernel


def test_numpy_kernel(mlacheck_case):
    fn = np_kernel.ops.mqa if mlacheck_case.form == "mqa" else np_kernel.ops.mha
    mlacheck_case.check(*fn(mlacheck_case))
