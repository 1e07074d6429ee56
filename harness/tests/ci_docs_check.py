#!/usr/bin/env python3
"""ci_docs_check.py GITHUB.yml GITLAB.yml: the CI examples of docs/ci parse as YAML and hold what
docs/ci/README.md promises: a job that installs mlacheck, builds the plugin with find_package, runs
gate.sh, and publishes summary.md and junit.xml even when the gate fails; every shell block passes
`sh -n`. Exit 77 (skipped) without PyYAML (python3-yaml)."""
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("ci_docs_check: no PyYAML (python3-yaml): skipped")
    sys.exit(77)

errors = []


def need(cond, what):
    if not cond:
        errors.append(what)


def sh_ok(where, text):
    r = subprocess.run(["sh", "-n"], input=text, text=True, capture_output=True)
    need(r.returncode == 0, f"{where}: sh -n: {r.stderr.strip()}")


def check_github(path):
    doc = yaml.safe_load(open(path))
    need(isinstance(doc, dict), f"{path}: expected a mapping at the top")
    # YAML 1.1 reads the key `on` as true
    need("on" in doc or True in doc, f"{path}: no 'on' (triggers)")
    jobs = doc.get("jobs") or {}
    need(len(jobs) >= 1, f"{path}: no jobs")
    for name, job in jobs.items():
        need("runs-on" in job, f"{path}: job {name}: no runs-on")
        steps = job.get("steps") or []
        runs = " ".join(s.get("run", "") for s in steps)
        for i, s in enumerate(steps):
            need(("run" in s) != ("uses" in s), f"{path}: job {name} step {i + 1}: expected exactly one of run, uses")
            if "run" in s:
                sh_ok(f"{path}: job {name} step {s.get('name', i + 1)}", s["run"])
        for word in ("cmake --install", "CMAKE_PREFIX_PATH", "gate.sh", "plugin:"):
            need(word in runs, f"{path}: job {name}: no step runs '{word}'")
        junit = [s for s in steps if "junit" in s.get("uses", "")]
        upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
        need(junit and "junit.xml" in str(junit[0].get("with", {})), f"{path}: job {name}: no JUnit report of junit.xml")
        need(upload and "mlacheck-report" in str(upload[0].get("with", {})),
             f"{path}: job {name}: no artifact of mlacheck-report/ (summary.md, junit.xml)")
        for s in junit + upload:
            need("if" in s, f"{path}: job {name}: step {s.get('name')} must run after a failed gate (if: ...)")


def check_gitlab(path):
    doc = yaml.safe_load(open(path))
    need(isinstance(doc, dict), f"{path}: expected a mapping at the top")
    jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and "script" in v}
    need(len(jobs) >= 1, f"{path}: no job with a script")
    for name, job in jobs.items():
        lines = (job.get("before_script") or []) + job["script"]
        need(all(isinstance(x, str) for x in lines), f"{path}: job {name}: script lines must be strings")
        sh_ok(f"{path}: job {name}", "\n".join(lines))
        text = "\n".join(job["script"])
        for word in ("cmake --install", "CMAKE_PREFIX_PATH", "gate.sh", "plugin:"):
            need(word in text, f"{path}: job {name}: no script line runs '{word}'")
        art = job.get("artifacts") or {}
        need(art.get("when") == "always", f"{path}: job {name}: artifacts must be kept when the gate fails (when: always)")
        need("junit.xml" in str((art.get("reports") or {}).get("junit", "")), f"{path}: job {name}: no junit report")
        need(any("mlacheck-report" in p for p in art.get("paths", [])), f"{path}: job {name}: no mlacheck-report/ artifact")


check_github(sys.argv[1])
check_gitlab(sys.argv[2])
for e in errors:
    print("ci_docs_check:", e)
if not errors:
    print(f"ci_docs_check: {sys.argv[1]} and {sys.argv[2]}: ok")
sys.exit(1 if errors else 0)
