# run/slurm/launch.sh — sourced by the batch scripts beside it: trains under Slurm with
# preemption and requeue. Expects DDPTOK_CONFIG (and optionally DDPTOK_ARGS, LAUNCHER,
# DDPTOK_ELASTIC).
#
#   LAUNCHER=srun    srun --mpi=pmix -K1 (Debian's Open MPI speaks PMIx; plain srun and
#                    --mpi=pmi2 do not work with it); -K1: a dead task ends the step
#   LAUNCHER=mpirun  mpirun inside the allocation (it reads the allocation from Slurm)
#   DDPTOK_ARGS      more arguments for ddptok, split into words as the shell would, with no
#                    expansion at all: blanks separate words, '...' and "..." quote (a value
#                    with a space: --set 'train.optimizer.betas=[0.9, 0.999]'), a backslash
#                    keeps the next character; no $, `, wildcard or ~ is expanded.
# Every other variable is data too: checked against the form Slurm gives it before use.
#
# Preemption: the job asks for SIGUSR1 before its time limit (--signal=B:USR1@120) and
# `scancel --signal=USR1 --batch` sends the same. The trap below, this script's first
# command, takes it at any moment: during make or prepare it is kept; it is not passed to
# the launcher (which forwards it at once to whatever ranks exist: a rank still loading dies
# of it, one not started never sees it) but written as the file DDPTOK_STOP_FILE names,
# which every rank looks at once per window. ddptok's ranks agree on it at the next window
# boundary, checkpoint, and exit 75; then this script requeues the job, and the next start
# resumes from the newest complete checkpoint (docs/launching.md "Stopping a run").
ddptok_stop_dir='' ddptok_stop_asked=0 ddptok_trapped=0
ddptok_stop() {
  ddptok_trapped=1 ddptok_stop_asked=1
  [ -n "$ddptok_stop_dir" ] && : >"$ddptok_stop_dir/stop"
  echo "launch.sh: SIGUSR1 — every rank checkpoints at its next window and stops (exit 75)"
}
trap ddptok_stop USR1
set -uo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
DDPTOK=${DDPTOK:-./ddptok}
LAUNCHER=${LAUNCHER:-srun}
EXIT_REQUEUE=75


# shell_words NAME TEXT: TEXT split into the array NAME by the rules above (DDPTOK_ARGS);
# status 1 on an unterminated quote.
shell_words() {
  local -n words_out=$1
  local s=$2 w='' inword=0 q='' c i
  words_out=()
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    if [ "$q" = "'" ]; then
      if [ "$c" = "'" ]; then q=''; else w+=$c; fi
    elif [ "$q" = '"' ]; then
      if [ "$c" = '"' ]; then q=''
      elif [ "$c" = '\' ] && [[ ${s:i+1:1} == [\"\\] ]]; then w+=${s:i+1:1}; i=$((i + 1))
      else w+=$c; fi
    else
      case $c in
        ' ' | $'\t' | $'\n') [ "$inword" = 1 ] && words_out+=("$w"); w='' inword=0 ;;
        "'" | '"') q=$c inword=1 ;;
        '\') i=$((i + 1)); w+=${s:i:1}; inword=1 ;;
        *) w+=$c inword=1 ;;
      esac
    fi
  done
  [ -z "$q" ] || return 1
  [ "$inword" = 0 ] || words_out+=("$w")
}
shell_words args "${DDPTOK_ARGS:-}" || { printf 'launch.sh: DDPTOK_ARGS=%q: a quote is not closed\n' "$DDPTOK_ARGS" >&2; exit 2; }

# DDPTOK_ELASTIC=1 (a config with train.sampler: global): the world size follows the
# allocation, so a job requeued onto fewer or more tasks resumes its checkpoint on the new
# W (docs/sampling.md "Elastic resume"); the bands sampler refuses that with exit 2. The allocation's
# tasks are SLURM_TASKS_PER_NODE's ("2(x3),1" = 7): a requeued job keeps the SLURM_NTASKS
# of its first start in its saved environment. The list is checked before any arithmetic.
alloc_tasks() {
  local n=0 part parts list=${SLURM_TASKS_PER_NODE:-}
  if ! [[ $list =~ ^[0-9]{1,6}(\(x[0-9]{1,6}\))?(,[0-9]{1,6}(\(x[0-9]{1,6}\))?)*$ ]]; then
    printf "launch.sh: SLURM_TASKS_PER_NODE=%q is not Slurm's task list (such as 2 or 2(x3),1): cannot size the elastic job\n" "$list" >&2
    return 1
  fi
  IFS=, read -r -a parts <<<"$list"
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then n=$((n + 10#${BASH_REMATCH[1]} * 10#${BASH_REMATCH[2]})); else n=$((n + 10#$part)); fi
  done
  echo "$n"
}
ntasks=${SLURM_NTASKS:-} elastic=() srun_n=()
if [ "${DDPTOK_ELASTIC:-0}" = 1 ]; then
  ntasks=$(alloc_tasks) || exit 2
  srun_n=(-n "$ntasks")
  elastic=(--set train.world_size="$ntasks" --set train.rank_bands=auto)
fi
restarts=${SLURM_RESTART_COUNT:-0}
[[ $restarts =~ ^[0-9]{1,9}$ ]] || { printf 'launch.sh: SLURM_RESTART_COUNT=%q is not a count\n' "$restarts" >&2; exit 2; }
case "$LAUNCHER" in
  srun) launch=(srun --mpi=pmix -K1 --kill-on-bad-exit=1 "${srun_n[@]}") ;;
  mpirun)
    [[ $ntasks =~ ^[1-9][0-9]{0,5}$ ]] || { printf 'launch.sh: LAUNCHER=mpirun needs the task count: SLURM_NTASKS=%q\n' "$ntasks" >&2; exit 2; }
    launch=(mpirun -np "$ntasks" -x DDPTOK_STOP_FILE) ;;
  *) printf 'launch.sh: LAUNCHER must be srun or mpirun, not %q\n' "$LAUNCHER" >&2; exit 2 ;;
esac

# What a fresh checkout lacks: the binary (make, on this node) and, on the first start of
# the job (not a requeue), the data (prepare is deterministic: the same config gives the
# same corpus, plan and data lock). DDPTOK_PREPARE=0 leaves the data as it is.
if [ ! -x "$DDPTOK" ]; then
  echo "launch.sh: $DDPTOK is not built: make"
  make -j"$(nproc)" || { echo "launch.sh: make failed (bash run/install-deps.sh lists the packages)" >&2; exit 2; }
fi
# The stop file (see the top) lives in a private directory on this node, where task 0 runs.
ddptok_stop_dir=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-stop.XXXXXX") || { echo "launch.sh: cannot create a temporary directory" >&2; exit 2; }
trap 'rm -rf "$ddptok_stop_dir"' EXIT
[ "$ddptok_stop_asked" = 0 ] || : >"$ddptok_stop_dir/stop"  # a SIGUSR1 that came before it existed
export DDPTOK_STOP_FILE=$ddptok_stop_dir/stop
if [ "$restarts" -eq 0 ] && [ "${DDPTOK_PREPARE:-1}" != 0 ]; then
  "$DDPTOK" prepare --config "$DDPTOK_CONFIG" "${args[@]}" || { echo "launch.sh: prepare failed" >&2; exit 2; }
fi

# One lineage to the end (interrupt_at=0): a stop comes only from a signal. --resume auto
# continues the newest intact checkpoint of a requeued job, starts fresh on an empty
# lineage, and ends 0 when the lineage is already finished (stopped in its last window).
train=("$DDPTOK" train --config "$DDPTOK_CONFIG" --set train.interrupt_at=0 "${elastic[@]}" "${args[@]}" --resume auto)
echo "ddptok job ${SLURM_JOB_ID:-?} (restart $restarts) on ${SLURM_JOB_NODELIST:-?}: $(printf '%q ' "${launch[@]}" "${train[@]}")"
"${launch[@]}" "${train[@]}" &
pid=$!
while :; do  # `wait` returns early (status > 128) when a trapped signal arrives: wait again
  ddptok_trapped=0
  wait "$pid"; rc=$?
  [ "$ddptok_trapped" = 1 ] && [ "$rc" -gt 128 ] || break
done
if [ "$rc" -eq "$EXIT_REQUEUE" ]; then
  echo "launch.sh: ddptok checkpointed on request; requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID" && exit 0
  echo "launch.sh: scontrol requeue failed" >&2
fi
exit "$rc"
