#!/bin/bash
# The GPU path by hand, on a machine with CUDA and a CUDA build of torch (CI has none): grades each assignment's
# sample class with --device cpu and --device cuda and compares the scores, then grades tests/gpu's three
# attention_scoring probes on cuda. Expected: the same scores for attention_scoring and practical10; lower ones on
# cuda for the bahdanau_attention and keras_additive_attention samples that make tensors without device= (the lesson);
# full marks for correct.py and gpu_at_load.py, 78 for not_device_agnostic.py, its failures naming the device.
#     bash tests/gpu/check.sh [PYTHON]      (default: .venv/bin/python)
set -u
PYTHON=${1:-.venv/bin/python}
OUT=$(mktemp -d)
grade() {  # assignment folder device
  local out=$OUT/$1-$3-$(basename "$2") started=$(date +%s%N)
  "$PYTHON" -m grader grade "$1" "$2" --out "$out" --device "$3" --force > "$out.log" 2>&1
  echo "$1 $(basename "$2") --device $3: exit $?, $(( ($(date +%s%N) - started) / 1000000 )) ms"
  cut -d, -f1-4 "$out/grades.csv" > "$out.scores"
}
"$PYTHON" -c "import torch; assert torch.cuda.is_available(), 'no CUDA here'" || exit 1
for assignment in attention_scoring bahdanau_attention keras_additive_attention practical10; do
  grade $assignment tests/submissions/$assignment cpu
  grade $assignment tests/submissions/$assignment cuda
  diff "$OUT/$assignment-cpu-$assignment.scores" "$OUT/$assignment-cuda-$assignment.scores" \
    && echo "  the same scores on cpu and cuda"
done
grade attention_scoring tests/gpu cuda
cat "$OUT/attention_scoring-cuda-gpu.scores"
grep -h -o "Your code made a tensor on the CPU[^\"]*" "$OUT"/attention_scoring-cuda-gpu/students/*/results.json | sort -u
echo "logs and pages: $OUT"
