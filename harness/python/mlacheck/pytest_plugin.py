"""pytest plugin: mlacheck's operator cases as tests of a backend's own suite. Registered as the
`pytest11` entry point `mlacheck` when the package is installed; in place: `pytest -p
mlacheck.pytest_plugin` (PYTHONPATH=harness/python).

Generated tests, one per case (no test file needed):

    pytest --mlacheck-suite ops-smoke --mlacheck-op mymodule:ops [--junitxml=ops.xml]

where mymodule.ops has mqa and/or mha (callables case -> (out, lse); a missing or None form is
declined), and optionally supports (a callable (feature, value) -> bool or a dict, see
mlacheck.cases.supports_fn) and name. Test ids are the case ids (mlacheck/ops-smoke::<case>);
declined cases are skipped with the reason ("mykernel declines kv format fp8ds"); a failure names the
case, the tensor and the metric against its limit.

Or a fixture in the backend's own tests, parametrized over the suite (--mlacheck-suite, default
ops-smoke; --mlacheck-filter SUBSTR):

    def test_my_decode(mlacheck_case):
        if mlacheck_case.form != "mqa":
            pytest.skip("decode kernel")
        out, lse = my_kernel(mlacheck_case.torch("cuda"), mlacheck_case.softmax_scale)
        mlacheck_case.check(out, lse)        # AssertionError naming case, tensor, metric and limit
"""
import importlib

import pytest


def pytest_addoption(parser):
    g = parser.getgroup("mlacheck", "mlacheck operator cases")
    g.addoption("--mlacheck-suite", default=None, help="operator suite: ops-smoke or ops-full")
    g.addoption("--mlacheck-op", default=None, metavar="MODULE:ATTR",
                help="the kernel: an object with mqa / mha (case -> (out, lse)) and optional supports, name; "
                     "one test is generated per case")
    g.addoption("--mlacheck-rules", default=None, help="rules file (default: suites/rules.tol, as mlacheck ops)")
    g.addoption("--mlacheck-filter", default=None, help="only cases whose id contains this")


class _Kernel:
    """The --mlacheck-op object: mqa, mha, supports, name (attributes or dict keys)."""

    def __init__(self, spec):
        mod, _, attr = spec.partition(":")
        if not mod or not attr:
            raise pytest.UsageError(f"--mlacheck-op {spec!r}: expected MODULE:ATTR")
        try:
            obj = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise pytest.UsageError(f"--mlacheck-op {spec}: {e}")
        get = obj.get if isinstance(obj, dict) else lambda k, d=None: getattr(obj, k, d)
        self.mqa, self.mha = get("mqa"), get("mha")
        if self.mqa is None and self.mha is None:
            raise pytest.UsageError(f"--mlacheck-op {spec}: has neither mqa nor mha")
        self.name = get("name") or attr
        from .cases import supports_fn
        sup = supports_fn(get("supports"))

        def supports(f, v):
            if f == "mqa" and self.mqa is None or f == "mha" and self.mha is None:
                return False
            return sup(f, v)
        self.supports = supports


class _SuiteNode(pytest.Collector):
    """The parent of the generated items (their ids: mlacheck/<suite>::<case>)."""

    def collect(self):
        return []


class MlacheckItem(pytest.Item):
    def __init__(self, *, suite, index, kernel, **kw):
        super().__init__(**kw)
        self._suite, self._index, self._kernel = suite, index, kernel

    def runtest(self):
        case = self._suite.case(self._index, self._kernel.supports, self._kernel.name)
        try:
            if case.skip_reason:
                pytest.skip(case.skip_reason)
            fn = self._kernel.mqa if case.form == "mqa" else self._kernel.mha
            case.check(*fn(case))
        finally:
            case.close()

    def repr_failure(self, excinfo, style=None):
        from .cases import JudgeFailure
        from ._errors import CaseError
        if isinstance(excinfo.value, (JudgeFailure, CaseError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"mlacheck {self._suite.name}::{self.name}"


_suites = {}


def _suite(config):
    from .cases import OpSuite
    name = config.getoption("--mlacheck-suite") or "ops-smoke"
    if name not in _suites:
        _suites[name] = OpSuite(name, config.getoption("--mlacheck-rules"))
    return _suites[name]


def _selected(config, suite):
    f = config.getoption("--mlacheck-filter")
    return [(i, n) for i, n in enumerate(suite.names) if not f or f in n]


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect
def pytest_collection_modifyitems(session, config, items):
    spec = config.getoption("--mlacheck-op")
    if not spec:
        return
    kernel = _Kernel(spec)
    suite = _suite(config)
    parent = _SuiteNode.from_parent(session, name=f"mlacheck/{suite.name}", nodeid=f"mlacheck/{suite.name}")
    for i, n in _selected(config, suite):
        items.append(MlacheckItem.from_parent(parent, name=n, suite=suite, index=i, kernel=kernel))


def pytest_generate_tests(metafunc):
    if "mlacheck_case" in metafunc.fixturenames:
        sel = _selected(metafunc.config, _suite(metafunc.config))
        metafunc.parametrize("mlacheck_case", [i for i, _ in sel], ids=[n for _, n in sel], indirect=True)


@pytest.fixture
def mlacheck_case(request):
    """One operator case (mlacheck.cases.OpCase) of --mlacheck-suite."""
    case = _suite(request.config).case(request.param)
    yield case
    case.close()


def pytest_unconfigure(config):
    for s in _suites.values():
        s.close()
    _suites.clear()
