#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu), with the zip unpacked in
# /autograder/source. It installs what run_autograder needs: bubblewrap if the image has it, Python 3.11 or newer,
# and a venv with the grader's exact pins from requirements.txt, torch as its CPU build (Gradescope has no GPU, and
# the CUDA wheels that PyPI's torch pulls in are gigabytes).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="${GRADER_VENV:-$ROOT/venv}"
TORCH_INDEX="${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
export DEBIAN_FRONTEND=noninteractive

apt-get update -q
# bubblewrap isolates student code where the container lets it make namespaces; without it the grader still grades
# and its output (the autograder's stdout, for the instructor) says which layers were missing.
apt-get install -y -q bubblewrap || echo "setup.sh: bubblewrap could not be installed; grading without it" >&2

recent() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
PYTHON=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null && recent "$candidate"; then PYTHON="$(command -v "$candidate")"; break; fi
done
if [ -z "$PYTHON" ]; then  # Ubuntu 22.04's python3 is 3.10; its universe component has 3.11
  apt-get install -y -q python3.11 python3.11-venv
  PYTHON="$(command -v python3.11)"
fi
# Debian and Ubuntu ship venv's ensurepip in a package of its own.
if ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
  apt-get install -y -q "python$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv"
fi
"$PYTHON" -m venv "$VENV"

# torch first, from the CPU index; requirements.txt's torch==X then finds it installed (X+cpu satisfies ==X).
TORCH="$(grep -E '^torch==' "$SOURCE/requirements.txt")"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$TORCH" --index-url "$TORCH_INDEX"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$SOURCE/requirements.txt"

# Fail the image build here, where Gradescope shows why, rather than on the first student's submission.
cd "$SOURCE"
"$VENV/bin/python" -c 'import torch, grader.cli; print("setup.sh: grader ready, torch", torch.__version__)'
