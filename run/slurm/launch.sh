# run/slurm/launch.sh — sourced by the batch scripts beside it: trains under Slurm with
# preemption and requeue. Expects DDPTOK_CONFIG (and optionally DDPTOK_ARGS, LAUNCHER,
# DDPTOK_ELASTIC).
#
#   LAUNCHER=srun    srun --mpi=pmix -K1 (Debian's Open MPI speaks PMIx; plain srun and
#                    --mpi=pmi2 do not work with it); -K1: a dead task ends the step
#   LAUNCHER=mpirun  mpirun inside the allocation (it reads the allocation from Slurm)
#
# Preemption: the job asks for SIGUSR1 before its time limit (--signal=B:USR1@120) and
# `scancel --signal=USR1 --batch` sends the same. The trap forwards it to the launcher,
# which forwards it to every rank (the launcher runs in the background so the shell can
# take the signal; SIGTERM would kill ranks before they can checkpoint). ddptok's ranks
# agree on it at the next window boundary, checkpoint, and exit 75; then this script
# requeues the job, and the next start resumes from the newest complete checkpoint.
set -uo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
DDPTOK=${DDPTOK:-./ddptok}
LAUNCHER=${LAUNCHER:-srun}
EXIT_REQUEUE=75


# DDPTOK_ELASTIC=1 (a config with train.sampler: global): the world size follows the
# allocation, so a job requeued onto fewer or more tasks resumes its checkpoint on the new
# W (docs/sampling.md "Elastic resume"); the bands sampler refuses that with exit 2. The allocation's
# tasks are SLURM_TASKS_PER_NODE's ("2(x3),1" = 7): a requeued job keeps the SLURM_NTASKS
# of its first start in its saved environment.
alloc_tasks() {
  local n=0 part parts
  IFS=, read -r -a parts <<<"${SLURM_TASKS_PER_NODE:?}"
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then n=$((n + BASH_REMATCH[1] * BASH_REMATCH[2])); else n=$((n + part)); fi
  done
  echo "$n"
}
ntasks=${SLURM_NTASKS:-} elastic=() srun_n=()
if [ "${DDPTOK_ELASTIC:-0}" = 1 ]; then
  ntasks=$(alloc_tasks) srun_n=(-n "$ntasks")
  elastic=(--set train.world_size="$ntasks" --set train.rank_bands=auto)
fi
case "$LAUNCHER" in
  srun) launch=(srun --mpi=pmix -K1 --kill-on-bad-exit=1 "${srun_n[@]}") ;;
  mpirun) launch=(mpirun -np "${ntasks:?}") ;;
  *) echo "launch.sh: LAUNCHER must be srun or mpirun, not '$LAUNCHER'" >&2; exit 2 ;;
esac

# What a fresh checkout lacks: the binary (make, on this node) and, on the first start of
# the job (not a requeue), the data (prepare is deterministic: the same config gives the
# same corpus, plan and data lock). DDPTOK_PREPARE=0 leaves the data as it is.
if [ ! -x "$DDPTOK" ]; then
  echo "launch.sh: $DDPTOK is not built: make"
  make -j"$(nproc)" || { echo "launch.sh: make failed (bash run/install-deps.sh lists the packages)" >&2; exit 2; }
fi
if [ "${SLURM_RESTART_COUNT:-0}" -eq 0 ] && [ "${DDPTOK_PREPARE:-1}" != 0 ]; then
  # shellcheck disable=SC2086
  "$DDPTOK" prepare --config "$DDPTOK_CONFIG" ${DDPTOK_ARGS:-} || { echo "launch.sh: prepare failed" >&2; exit 2; }
fi

pid=
forward() { echo "launch.sh: SIGUSR1 — asking ddptok to checkpoint and stop"; [ -n "$pid" ] && kill -USR1 "$pid"; }
trap forward USR1
# One lineage to the end (interrupt_at=0): a stop comes only from a signal. --resume auto
# continues the newest intact checkpoint of a requeued job, starts fresh on an empty
# lineage, and ends 0 when the lineage is already finished (stopped in its last window).
echo "ddptok job ${SLURM_JOB_ID:-?} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NODELIST:-?}: ${launch[*]} $DDPTOK train --config $DDPTOK_CONFIG ${elastic[*]} ${DDPTOK_ARGS:-}"
# shellcheck disable=SC2086
"${launch[@]}" "$DDPTOK" train --config "$DDPTOK_CONFIG" --set train.interrupt_at=0 "${elastic[@]}" ${DDPTOK_ARGS:-} --resume auto &
pid=$!
rc=0
while :; do  # `wait` returns early when a trapped signal arrives; wait again for the real end
  wait "$pid"; rc=$?
  kill -0 "$pid" 2>/dev/null || break
done
if [ "$rc" -eq "$EXIT_REQUEUE" ]; then
  echo "launch.sh: ddptok checkpointed on request; requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID" && exit 0
  echo "launch.sh: scontrol requeue failed" >&2
fi
exit "$rc"
