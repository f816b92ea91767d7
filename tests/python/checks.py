"""Checks the python.* tests share: each prints ok / FAIL with what it checked; finish() exits
non-zero when any failed."""
import sys

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def raises(error, fn, text):
    """fn() must raise `error` whose message holds `text`."""
    try:
        fn()
    except error as e:
        check(text in str(e), f"{error.__name__} naming '{text}': {e}")
        return
    check(False, f"no {error.__name__} ('{text}')")


def finish():
    if failures:
        sys.exit(f"{len(failures)} checks failed")
    print("OK")
