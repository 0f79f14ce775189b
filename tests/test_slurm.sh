# A real single-node Slurm (Debian's slurm-wlm and munge) started for the test: both
# batch scripts run under slurmctld/slurmd (srun --mpi=pmix and mpirun inside the
# allocation), and a job preempted mid-run with `scancel --signal=USR1 --batch` is
# requeued and ends bit-identical to an uninterrupted run; a global-sampler job preempted at
# W = 2 and requeued with one task resumes on W = 1 within the elastic bound. Every daemon
# is stopped by PID.
# The daemons live in /usr/sbin (not on a user's PATH); the node is addressed as 127.0.0.1
# (no /etc/hosts entry needed); every Slurm client call is bounded by a timeout.
export PATH="$PATH:/usr/sbin:/sbin"
slurm_why() {  # prints why this machine cannot run the group, nothing when it can
  local d
  for d in slurmctld slurmd munged sbatch sinfo; do
    command -v "$d" >/dev/null || { echo "$d not found on PATH or in /usr/sbin (make test installs slurm-wlm and munge: run/install-deps.sh --tests)"; return; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "needs root (slurmd runs jobs as SlurmUser root)"; return; }
  [ -r /etc/munge/munge.key ] || { echo "no readable /etc/munge/munge.key"; return; }
  # slurmd initialises its cgroup plugin even with proctrack/linuxproc and never registers
  # without one (a chroot or container that has /sys but not its cgroup mount).
  [ -e /sys/fs/cgroup/cgroup.controllers ] || [ -d /sys/fs/cgroup/cpu ] || [ -d /sys/fs/cgroup/systemd ] \
    || { echo "no cgroup file system at /sys/fs/cgroup (slurmd cannot start its cgroup plugin)"; return; }
}
sl() { timeout -k 2 10 "$@"; }  # a Slurm client call: bounded, whatever the daemons do
# Teardown: cancel this cluster's jobs (so slurmd ends their slurmstepd), then the daemons.
slurm_down() {
  if [ -n "${SLURM_CONF:-}" ]; then
    sl scancel --full --quiet --partition=test 2>/dev/null
    for _ in $(seq 50); do [ -z "$(sl squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; sleep 1; for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
}
# slurm_up: a one-node cluster of this case's own (state under ./slurm, stopped when the case
# ends), checked up (the node idle), and the case in ./work with run/ and configs/ linked;
# false (the case skipped, or failed) where it cannot be.
slurm_up() {
  local why; why=$(slurm_why)
  [ -z "$why" ] || { skip "$CASE" "$why"; return 1; }
  S=$PWD/slurm W=$PWD/work
  mkdir -p "$W" "$S/state" "$S/spool" "$S/munge"
  host=$(hostname -s)
  pids=()
  trap slurm_down EXIT
  munged --socket="$S/munge/munge.sock" --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/seed" \
    --key-file=/etc/munge/munge.key --log-file="$S/munge/munged.log" --force 2>/dev/null
  sleep 0.5; pids+=("$(cat "$S/munge/munged.pid" 2>/dev/null)")
cat > "$S/slurm.conf" <<CONF
ClusterName=ddptok-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=5
KillWait=2
FirstJobId=$((RANDOM * 10 + 1000))
ReturnToService=2
SchedulerParameters=sched_interval=1
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=30 State=UP
CONF

  export SLURM_CONF="$S/slurm.conf"
  slurmctld -D -f "$SLURM_CONF" >/dev/null 2>&1 & pids+=($!)
  slurmd -D -f "$SLURM_CONF" >/dev/null 2>&1 & pids+=($!)
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do sl sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.5; done
  if ! sl sinfo -h -o %t 2>/dev/null | grep -q idle; then
    bad "$CASE: slurmctld + slurmd up, the node idle within 30 s"; tail -n 5 "$S/slurmctld.log" "$S/slurmd.log"; return 1
  fi
  ok "$CASE: slurmctld + slurmd up, the node idle within 30 s" "(node $host)"
  cd "$W"; ln -s "$ROOT/run" run; ln -s "$ROOT/configs" configs
  export DDPTOK="$ROOT/ddptok" DDPTOK_CONFIG=configs/tiny.yaml
}
# Requeued, the job waits out Slurm's requeue delay: start it now — but only once the
# first incarnation's processes are gone, or its late end is taken for the new one's.
# restart_requeued J [FIELD=VALUE...]: the fields are updated first (e.g. NumTasks=1).
restart_requeued() {
  local j=$1 st started=0 deadline=$((SECONDS + 180)) f; shift
  while [ $SECONDS -lt $deadline ]; do
    st=$(sl squeue -h -j "$j" -o %T 2>/dev/null)
    if [ $started -eq 0 ] && [ "$st" = PENDING ] && ! pgrep -f "slurmstepd: \[$j\." >/dev/null; then
      sleep 1
      for f in "$@"; do sl scontrol update JobId="$j" "$f" 2>&1 | sed "s/^/       scontrol update $f: /"; done
      [ $# -gt 0 ] && sl scontrol show job "$j" | grep -oE 'NumNodes=[^ ]* NumCPUs=[^ ]* NumTasks=[^ ]*' | sed 's/^/       /'
      sl scontrol update JobId="$j" StartTime=now >/dev/null 2>&1 && started=1
    fi
    [ $started -eq 1 ] && [ -z "$st" ] && break
    sleep 0.2
  done
}

# 1. one node, srun --mpi=pmix, in a directory with no data yet: the script prepares it
case_batch_1node() {
  slurm_up || return
  local rc d same
  OUT=$(timeout 180 sbatch --wait --parsable -o slurm-a.out run/slurm/ddptok-1node.sbatch 2>&1); rc=$?
  grep -q '^prepare: 136 sequences' slurm-a.out && ok "sbatch ddptok-1node.sbatch: the batch script prepared the data itself (first start)" \
    || { bad "sbatch ddptok-1node.sbatch: the batch script prepared the data itself (first start)"; tail -5 slurm-a.out; }
  ddp 2 train --config configs/tiny.yaml --continuous >/dev/null 2>&1
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/checkpoints/step-0012 artifacts/continuous/step-0012); same=$?
  [ $rc -eq 0 ] && [ $same -eq 0 ] && ok "sbatch ddptok-1node.sbatch (srun --mpi=pmix): done, equal to mpirun's run" "(max |dtheta| = $d)" \
    || { bad "sbatch ddptok-1node.sbatch (srun --mpi=pmix): done, equal to mpirun's run" "— exit $rc, compare $same"; tail -15 slurm-a.out; }
}
# 2. the multi-node script on this one node (2 tasks), mpirun inside the allocation
case_batch_multinode() {
  slurm_up || return
  local rc d same
  one prepare --config configs/tiny.yaml >/dev/null && ddp 2 train --config configs/tiny.yaml --continuous >/dev/null 2>&1
  OUT=$(LAUNCHER=mpirun DDPTOK_ARGS="--set paths.artifacts=b" timeout 180 sbatch --wait -N1 --ntasks-per-node=2 -o slurm-b.out run/slurm/ddptok-multinode.sbatch 2>&1); rc=$?
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" b/checkpoints/step-0012 artifacts/continuous/step-0012); same=$?
  [ $rc -eq 0 ] && [ $same -eq 0 ] && ok "sbatch ddptok-multinode.sbatch -N1 (mpirun in the allocation): done, equal to mpirun's run" "(max |dtheta| = $d)" \
    || { bad "sbatch ddptok-multinode.sbatch -N1 (mpirun in the allocation): done, equal to mpirun's run" "— exit $rc, compare $same"; tail -15 slurm-b.out; }
}
# 3. a failing step fails the job: a config error on every rank
case_batch_failing_step() {
  slurm_up || return
  local rc
  OUT=$(DDPTOK_ARGS="--set model.hidden=0" timeout 120 sbatch --wait -o slurm-c.out run/slurm/ddptok-1node.sbatch 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -q 'model.hidden' slurm-c.out && ok "a failing step fails the batch job" "(exit $rc)" || bad "a failing step fails the batch job" "— exit $rc"
}
# 4. preemption: USR1 to the batch shell mid-run, requeue, resume, same result
case_preempt_requeue() {
  slurm_up || return
  local long=(--set train.updates=200 --set paths.outputs=op --set paths.artifacts=ap) J d same
  one prepare --config "$CONFIGS/minimum.yaml" "${long[@]}" >/dev/null
  ddp 2 train --config "$CONFIGS/minimum.yaml" "${long[@]}" --continuous >/dev/null 2>&1
  J=$(DDPTOK_CONFIG=configs/minimum.yaml DDPTOK_ARGS="${long[*]}" sl sbatch --parsable -o slurm-p.out run/slurm/ddptok-1node.sbatch)
  wait_lines op/train/interrupted.jsonl 20 60
  sl scancel --signal=USR1 --batch "$J"
  restart_requeued "$J"
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" ap/checkpoints/step-0200 ap/continuous/step-0200); same=$?
  grep -q 'requeueing job' slurm-p.out && ok "preempted Slurm job checkpointed and requeued itself" "($(grep -o 'checkpointing at step [0-9]*' slurm-p.out | head -1))" \
    || { bad "preempted Slurm job checkpointed and requeued itself" "— no requeue in slurm-p.out"; tail -20 slurm-p.out; }
  [ $same -eq 0 ] && grep -q 'restart 1' slurm-p.out && ok "requeued Slurm job resumed and ended bit-identical to the uninterrupted run" "(max |dtheta| = $d)" \
    || { bad "requeued Slurm job resumed and ended bit-identical to the uninterrupted run" "— compare $same ($d)"; tail -10 slurm-p.out; }
}
# 5. elastic requeue: the global sampler's job preempted at W = 2, requeued with one task,
#    resumes its W = 2 checkpoint on W = 1 and ends within the elastic bound of the
#    uninterrupted W = 2 run: eps·(U − s)·max|θ| (README "Elastic resume").
case_elastic_requeue() {
  slurm_up || return
  local el=(--set train.updates=200 --set train.sampler=global --set train.partition=balanced --set paths.outputs=oe --set paths.artifacts=ae) J s d bound
  one prepare --config "$CONFIGS/minimum.yaml" "${el[@]}" >/dev/null
  ddp 2 train --config "$CONFIGS/minimum.yaml" "${el[@]}" --continuous >/dev/null 2>&1
  J=$(DDPTOK_ELASTIC=1 DDPTOK_CONFIG=configs/minimum.yaml DDPTOK_ARGS="${el[*]}" sl sbatch --parsable -o slurm-e.out run/slurm/ddptok-1node.sbatch)
  wait_lines oe/train/interrupted.jsonl 20 60
  sl scancel --signal=USR1 --batch "$J"
  restart_requeued "$J" NumTasks=1 NumCPUs=1
  s=$(grep -o 'checkpointing at step [0-9]*' slurm-e.out | head -1 | grep -o '[0-9]*$')
  grep -q 'restart 1' slurm-e.out && grep -q 'W = 1, steps' slurm-e.out && ok "elastic Slurm job: preempted at W = 2, requeued and resumed on W = 1" "(step ${s:-?})" \
    || { bad "elastic Slurm job: preempted at W = 2, requeued and resumed on W = 1" "— no W = 1 restart in slurm-e.out"; grep -E "ddptok job|W = " slurm-e.out; }
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" --rank0 ae/checkpoints/step-0200 ae/continuous/step-0200)
  bound=$(/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('ae/continuous/step-0200/rank-0000.h5') as f:
    m = max(float(np.max(np.abs(f['model'][p][()]))) for p in f['model'])
print(2**-23 * (200 - ${s:-200}) * m)")
  /usr/bin/python3 -c "import sys; sys.exit(not (float('$d') <= $bound))" 2>/dev/null \
    && ok "elastic Slurm job: the W = 1 step-200 model within the bound of the W = 2 run" "(max |dtheta| = $d <= $bound)" \
    || { bad "elastic Slurm job: the W = 1 step-200 model within the bound of the W = 2 run" "— max |dtheta| = $d, bound $bound"; tail -10 slurm-e.out; }
}
