#!/bin/bash
# Splits an OpenAI batch file (JSONL, as `ortllm run-batch` reads) into contiguous shards, submits
# a job array that runs `ortllm run-batch` on each shard (ortllm-batch-shard.sbatch), and a merge
# job (ortllm-batch-merge.sbatch) that runs after every task succeeded (--dependency=afterok) and
# joins the shard outputs into OUTPUT in the input's order. Reference: docs/scale-out.md, "Slurm".
#
#   deploy/slurm/submit-batch.sh [--shards N] [--work-dir DIR] INPUT OUTPUT --model MODEL [run-batch flags]
#
# Prints the array and merge job ids on stdout. sbatch's own variables (SBATCH_PARTITION,
# SBATCH_TIMELIMIT, SBATCH_ACCOUNT, ...) apply to both jobs.

set -euo pipefail

usage() {
  echo "usage: $0 [--shards N] [--work-dir DIR] INPUT OUTPUT --model MODEL [ortllm run-batch flags]" >&2
  exit 2
}
die() { echo "submit-batch: error: $*" >&2; exit 2; }

HERE=$(dirname "$(readlink -f "$0")")
shards=2
work_dir=""
while (($# > 0)); do
  case $1 in
    --shards) (($# >= 2)) || usage; shards=$2; shift 2 ;;
    --shards=*) shards=${1#*=}; shift ;;
    --work-dir) (($# >= 2)) || usage; work_dir=$2; shift 2 ;;
    --work-dir=*) work_dir=${1#*=}; shift ;;
    -h | --help) usage ;;
    *) break ;;
  esac
done
(($# >= 2)) || usage
input=$1
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards must be a positive number, got '$shards'"
[[ -f $input && -r $input ]] || die "cannot read input file $input"
[[ -d $(dirname "$2") ]] || die "output directory $(dirname "$2") does not exist"
output=$(readlink -f "$2")
shift 2
for arg in "$@"; do
  case $arg in
    -i | --input-file | --input-file=* | -o | --output-file | --output-file=*) die "$arg: the shard jobs set the input and output files" ;;
  esac
done

# Blank lines are not requests (run-batch skips them); never more shards than requests.
requests=$(grep -c '[^[:space:]]' "$input" || true)
((shards > requests && requests > 0)) && shards=$requests
((requests == 0)) && shards=1

# The shard files must be on a file system the compute nodes see: beside OUTPUT by default.
if [[ -z $work_dir ]]; then
  work_dir=$(mktemp -d "$(dirname "$output")/.$(basename "$output").shards.XXXXXX")
else
  mkdir -p "$work_dir"
  work_dir=$(readlink -f "$work_dir")
fi

# Request r (0-based, blank lines skipped) goes to shard floor(r * shards / requests): contiguous
# ranges whose sizes differ by at most one, so concatenating the outputs restores input order. Each
# shard file starts with as many empty lines as precede its range, so run-batch's line numbers (in
# its error records) are those of INPUT.
for ((k = 0; k < shards; k++)); do : >"$work_dir/shard-$k.jsonl"; done
awk -v shards="$shards" -v requests="$requests" -v dir="$work_dir" '
  /[^[:space:]]/ { k = int(r * shards / requests); r++ }
  {
    file = dir "/shard-" k ".jsonl"
    if (file != current) {
      if (current != "") close(current)
      current = file
      for (i = 1; i < NR; i++) print "" > file
    }
    print > file
  }
' "$input"

array_job=$(sbatch --parsable --array="0-$((shards - 1))" "$HERE/ortllm-batch-shard.sbatch" "$work_dir" "$@")
array_job=${array_job%%;*}
merge_job=$(sbatch --parsable --dependency="afterok:$array_job" --kill-on-invalid-dep=yes \
  "$HERE/ortllm-batch-merge.sbatch" "$work_dir" "$shards" "$output")
merge_job=${merge_job%%;*}

echo "submit-batch: $requests request(s) in $shards shard(s) under $work_dir" >&2
echo "submit-batch: array job $array_job (run-batch per shard), merge job $merge_job (writes $output)" >&2
# For scripts, as sbatch --parsable: the two job ids.
echo "$array_job $merge_job"
