#!/usr/bin/env bash
# `pip install .` of the source tree into a fresh virtual environment that sees Debian's numpy and
# torch, then the module's tests against the installed package, from outside the source tree
# (CTest python_pip_install, labels python and long: the install builds the libraries the module
# needs, several minutes on two cores). scikit-build-core comes from PyPI (pyproject.toml).
# Usage: pip_install.sh SOURCE_DIR AMPBENCH_CLI WORK_DIR
set -euo pipefail
source_dir=$1
cli=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$source_dir"
cd "$work"
"$work/venv/bin/python" -c 'import ampbench, sys; print("installed:", ampbench.__file__); sys.exit(0 if "/venv/" in ampbench.__file__ else 1)'
AMPBENCH_CLI=$cli "$work/venv/bin/python" -m pytest -p no:cacheprovider -rs -q \
  "$source_dir/harness/python/test"
