"""The `detkit` command of a pip-installed detkit: runs the native program installed beside this
package (detkit/bin/detkit) with the same arguments, in this process (exec)."""
import os
import sys


def main():
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "detkit")
    if not os.access(program, os.X_OK):
        sys.exit(f"detkit: the native program {program} is missing: this detkit package was not "
                 "installed by `pip install .` (in a build tree, run build/tools/detkit)")
    os.execv(program, [program] + sys.argv[1:])


if __name__ == "__main__":
    main()
