#!/bin/bash
# The GPU path by hand, on a machine with CUDA and a CUDA build of torch (CI has none): grades each assignment's
# sample class with --device cpu and --device cuda and compares the scores, then grades three attention_scoring
# probes on cuda, each made from the sample class's correct older_edition.py: as it is; with a cell that used the GPU
# while loading (d2l.try_gpu() in the course); with masked_softmax moving valid_lens to the CPU. Expected: the same
# scores for attention_scoring and practical10; lower ones on cuda for the bahdanau_attention and
# keras_additive_attention samples that make tensors without device= (the lesson); full marks for the first two
# probes, 78 for the third, its failures naming the device.
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
PROBES=$OUT/probes && mkdir -p "$PROBES"
BASE=tests/submissions/attention_scoring/older_edition.py
cp $BASE "$PROBES/correct.py"
{ cat $BASE; printf '\n\ndevice = torch.device("cuda")\nprint(torch.ones(2, 3, device=device).softmax(-1).device)\n'; } \
  > "$PROBES/gpu_at_load.py"
{ cat $BASE; printf '\n\n_on_device = masked_softmax\ndef masked_softmax(X, valid_lens):\n'
  printf '    return _on_device(X, None if valid_lens is None else valid_lens.cpu())\n'; } > "$PROBES/not_device_agnostic.py"
grade attention_scoring "$PROBES" cuda
cat "$OUT/attention_scoring-cuda-probes.scores"
grep -h -o "Your code made a tensor on the CPU[^\"]*" "$OUT"/attention_scoring-cuda-probes/students/*/results.json | sort -u
echo "logs and pages: $OUT"
