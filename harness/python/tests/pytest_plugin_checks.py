#!/usr/bin/env python3
"""pytest_plugin_checks.py: the pytest plugin (mlacheck.pytest_plugin) end to end, with numpy only:
generated tests (--mlacheck-op np_kernel:ops) over ops-smoke with a planted 1% scale error in mha:
exit 1, the junit file has 10 test cases with ids mlacheck.ops-smoke / <case>, the 2 fp8ds cases
skipped with the reason, the failing mha cases naming the case, the tensor and the metric against its
limit; without the planted error exit 0; the fixture route (tests/fixture_route_example.py) with
--mlacheck-filter. Exit 77 (skipped) when this python has no pytest."""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
FAILS = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILS.append(what)


def pytest(args, err="0"):
    # the plugin by -p only: an installed copy (or a mlacheck.egg-info on the path) would register it twice
    env = dict(os.environ, NP_KERNEL_SCALE_ERROR=err, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               PYTHONPATH=os.pathsep.join([os.path.join(HERE, ".."), HERE, os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "mlacheck.pytest_plugin", "-p", "no:cacheprovider",
                        "-q", "-rs"] + args, cwd=tempfile.mkdtemp(prefix="mlacheck-pt-"), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    print(p.stdout[-3000:])
    return p.returncode, p.stdout


def junit(path):
    cases = ET.parse(path).getroot().iter("testcase")
    return {c.get("name"): c for c in cases}


def main():
    try:
        import pytest as _  # noqa: F401
    except ImportError:
        print("SKIP: this python has no pytest")
        return 77
    d = tempfile.mkdtemp(prefix="mlacheck-junit-")
    j = os.path.join(d, "bug.xml")
    rc, out = pytest(["--mlacheck-suite", "ops-smoke", "--mlacheck-op", "np_kernel:ops", f"--junitxml={j}"], "0.01")
    check(rc == 1, f"planted mha scale error: pytest exit {rc}, expected 1")
    t = junit(j)
    check(len(t) == 10 and all(c.get("classname") == "mlacheck.ops-smoke" for c in t.values()),
          f"junit: {len(t)} test cases named mlacheck.ops-smoke / <case id>, expected 10")
    skipped = {n for n, c in t.items() if c.find("skipped") is not None}
    check(skipped == {"mqa-k2-h64-p16-fp8ds-small-bb", "mha-k2-h32-p128-fp8ds-small-bb"}
          and all(t[n].find("skipped").get("message") == "numpy declines kv format fp8ds" for n in skipped),
          f"junit: the fp8ds cases skipped with 'numpy declines kv format fp8ds': {sorted(skipped)}")
    failed = {n: c.find("failure").get("message") for n, c in t.items() if c.find("failure") is not None}
    check(set(failed) <= {n for n in t if n.startswith("mha-")} and len(failed) >= 2,
          f"junit: only prefill (mha) cases fail: {sorted(failed)}")
    m = failed.get("mha-v3-h128-p16-fp8kv-real-ba", "")
    check(m.startswith("FAIL mha-v3-h128-p16-fp8kv-real-ba: mha_out: ") and "over max_abs 0.0008" in m,
          f"a failure names the case, the tensor and the metric vs its limit: {m[:140]}")
    check("mha-v3-h128-p16-fp8kv-real-ba: mha_out" in out, "the terminal report names case and tensor")
    j = os.path.join(d, "good.xml")
    rc, out = pytest(["--mlacheck-suite", "ops-smoke", "--mlacheck-op", "np_kernel:ops", f"--junitxml={j}"])
    t = junit(j)
    check(rc == 0 and sum(c.find("failure") is None and c.find("skipped") is None for c in t.values()) == 8,
          f"the numpy kernel: exit {rc}, 8 passed, 2 skipped")
    rc, out = pytest(["--mlacheck-op", "np_kernel:nope"])
    check(rc == 4 and "np_kernel:nope" in out, f"a bad --mlacheck-op is a usage error (exit {rc})")
    j = os.path.join(d, "fixture.xml")
    rc, out = pytest([os.path.join(HERE, "fixture_route_example.py"), "--mlacheck-filter", "mqa-v3",
                      f"--junitxml={j}"])
    t = junit(j)
    check(rc == 0 and sorted(t) == ["test_numpy_kernel[mqa-v3-h128-p1-fp8kv-real-bc]",
                                    "test_numpy_kernel[mqa-v3-h128-p64-bf16-small-ba]",
                                    "test_numpy_kernel[mqa-v3-h32-p16-fp8kv-fnuz-small-ba]"],
          f"the fixture route: 3 parametrized tests with case ids: {sorted(t)}")
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
