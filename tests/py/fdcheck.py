"""The shared frame of the tests/py/test_*.py scripts: a named check that
prints `ok`/`FAIL`, a runner for the binary under test (optionally under an
address-space limit), a scratch directory, and the closing summary line."""
import json, os, resource, shutil, subprocess, sys, tempfile


class Checks:
    def __init__(self, name, prefix):
        self.name = name
        self.bin = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.abspath("build/fidelity")
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.passed = self.failed = 0

    def case(self, what, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   %s" % what)
        else:
            self.failed += 1
            print("FAIL %s %s" % (what, str(detail)[:800]))

    def run(self, *args, limit=None):
        pre = (lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))) if limit else None
        p = subprocess.run([self.bin] + [str(a) for a in args], capture_output=True, text=True, preexec_fn=pre)
        return p.returncode, p.stdout, p.stderr

    def path(self, *p):
        return os.path.join(self.work, *p)

    def manifest(self, ds):
        return json.load(open(os.path.join(ds, "fidelity-dataset.json")))

    def finish(self):
        shutil.rmtree(self.work, ignore_errors=True)
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
