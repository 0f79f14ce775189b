# A real single-node Slurm (Debian's slurm-wlm and munge) started for the test: both
# batch scripts run under slurmctld/slurmd (srun --mpi=pmix and mpirun inside the
# allocation), and a job preempted mid-run with `scancel --signal=USR1 --batch` is
# requeued and ends bit-identical to an uninterrupted run; a global-sampler job preempted at
# W = 2 and requeued with one task resumes on W = 1 within the elastic bound. Every daemon
# is stopped by PID.
# The daemons live in /usr/sbin (not on a user's PATH); the node is addressed as 127.0.0.1
# (no /etc/hosts entry needed); every Slurm client call is bounded by a timeout.
export PATH="$PATH:/usr/sbin:/sbin"
# run/slurm/launch.sh without Slurm: srun and scontrol stubbed (the stub srun records its
# arguments, one per line, and runs mpirun; scontrol records its line), ddptok stubbed where
# only its arguments matter. Every environment value is data: a task list that is not
# Slurm's is refused before any arithmetic (bash evaluates $(...) inside an array subscript
# of $((...))), DDPTOK_ARGS is split into words with no expansion, quotes kept.
# launch_stubs: the stubs in ./stub, run/ and configs/ linked here (T = this directory).
launch_stubs() {
  T=$PWD; mkdir -p "$T/stub"; ln -s "$ROOT/run" "$T/run"; ln -s "$ROOT/configs" "$T/configs"
  cat >"$T/stub/srun" <<'STUB'
#!/bin/bash
printf '%s\n' "$@" >"$STUB_LOG/srun.args"
while [ $# -gt 0 ]; do case $1 in -n) shift 2 ;; -*) shift ;; *) break ;; esac; done
exec mpirun -np "${SLURM_NTASKS:-2}" "$@"
STUB
  printf '#!/bin/bash\necho "$*" >>"$STUB_LOG/scontrol.log"\n' >"$T/stub/scontrol"
  printf '#!/bin/bash\nprintf "%%s\\n" "$@" >>"$STUB_LOG/ddptok.args"\n' >"$T/stub/ddptok"
  chmod +x "$T/stub/"*
}
batch() {  # batch ENV...: the one-node batch script in $T, as Slurm would start it (stubs first on PATH)
  (cd "$T" && rm -f srun.args ddptok.args scontrol.log && env PATH="$T/stub:$PATH" STUB_LOG="$T" SLURM_SUBMIT_DIR="$T" SLURM_JOB_ID=7 \
     SLURM_NTASKS=2 SLURM_TASKS_PER_NODE=2 DDPTOK="$T/stub/ddptok" "$@" bash run/slurm/ddptok-1node.sbatch)
}
case_launch_tasks_not_code() {
  launch_stubs
  local rc
  OUT=$(batch SLURM_TASKS_PER_NODE='PATH[$(touch PWNED)]' DDPTOK_ELASTIC=1 2>&1); rc=$?
  [ $rc -eq 2 ] && [ ! -e "$T/PWNED" ] && [ ! -e "$T/srun.args" ] && grep -q "SLURM_TASKS_PER_NODE=.* is not Slurm's task list" <<<"$OUT" \
    && ok "launch.sh: a SLURM_TASKS_PER_NODE holding \$(touch PWNED) is refused in one line, nothing run, no file made" "(exit 2)" \
    || { bad "launch.sh: a SLURM_TASKS_PER_NODE holding \$(touch PWNED) is refused in one line, nothing run, no file made" "— exit $rc, PWNED $([ -e "$T/PWNED" ] && echo made || echo absent)"; echo "$OUT" | tail -3; }
}
case_launch_elastic_tasks() {
  launch_stubs
  local rc
  OUT=$(batch SLURM_TASKS_PER_NODE='2(x3),1' DDPTOK_ELASTIC=1 2>&1); rc=$?
  [ "$(sed -n '4,5p' "$T/srun.args" 2>/dev/null | tr '\n' ' ')" = "-n 7 " ] && grep -qx 'train.world_size=7' "$T/srun.args" \
    && ok "launch.sh: DDPTOK_ELASTIC=1 on tasks 2(x3),1: srun -n 7 and train.world_size=7" \
    || { bad "launch.sh: DDPTOK_ELASTIC=1 on tasks 2(x3),1: srun -n 7 and train.world_size=7" "— exit $rc"; cat "$T/srun.args"; }
}
case_launch_args_words() {
  launch_stubs
  local rc want got_prepare got_train
  touch "$T/train.updates=99"
  OUT=$(batch DDPTOK_ARGS="--set train.updates=?? --set 'train.optimizer.betas=[0.9, 0.999]' --set \"paths.outputs=my \\\"out\\\"\" --set train.seed=\\\$HOME" 2>&1); rc=$?
  want=$'--set\ntrain.updates=??\n--set\ntrain.optimizer.betas=[0.9, 0.999]\n--set\npaths.outputs=my "out"\n--set\ntrain.seed=$HOME'
  got_prepare=$(sed -n '4,11p' "$T/ddptok.args" 2>/dev/null); got_train=$(sed -n '/^train.interrupt_at=0$/,/^--resume$/p' "$T/srun.args" 2>/dev/null | sed '1d;$d')
  [ $rc -eq 0 ] && [ "$got_prepare" = "$want" ] && [ "$got_train" = "$want" ] \
    && ok "launch.sh: DDPTOK_ARGS reach prepare and train word for word: ?? not globbed beside train.updates=99, a quoted space kept, no \$ expanded" \
    || { bad "launch.sh: DDPTOK_ARGS reach prepare and train word for word: ?? not globbed beside train.updates=99, a quoted space kept, no \$ expanded" "— exit $rc; prepare got:"; echo "$got_prepare" | sed 's/^/       | /'; echo "       train got:"; echo "$got_train" | sed 's/^/       | /'; }
}
case_launch_unclosed_quote() {
  launch_stubs
  local rc
  OUT=$(batch DDPTOK_ARGS="--set 'train.updates=3" 2>&1); rc=$?
  [ $rc -eq 2 ] && [ ! -e "$T/srun.args" ] && grep -q "^launch.sh: DDPTOK_ARGS=.*: a quote is not closed" <<<"$OUT" \
    && ok "launch.sh: an unclosed quote in DDPTOK_ARGS is refused before anything runs" "(exit 2)" \
    || { bad "launch.sh: an unclosed quote in DDPTOK_ARGS is refused before anything runs" "— exit $rc"; echo "$OUT" | tail -2; }
}
# SIGUSR1 to the batch shell at any moment from its start, also during prepare (the old
# script trapped it only after prepare and died of it, exit 138; and it passed the signal to
# the launcher): each trial checkpoints, ends 75 inside, and the script requeues the job.
case_launch_sigusr1_early() {
  launch_stubs
  local sg=(--set train.updates=$((SIGNAL_SPREAD_MS > 200 ? SIGNAL_SPREAD_MS * 10 : 2000)) --set paths.outputs=so)
  local good=0 outcomes=() i d pid dog rc ck
  for ((i = 0; i < SIGNAL_TRIALS; i++)); do
    d=$(signal_delay $i $SIGNAL_TRIALS)
    (cd "$T" && rm -f scontrol.log && exec env PATH="$T/stub:$PATH" STUB_LOG="$T" SLURM_SUBMIT_DIR="$T" SLURM_JOB_ID=7 SLURM_NTASKS=2 \
       DDPTOK="$DDPTOK" DDPTOK_CONFIG=configs/tiny.yaml DDPTOK_ARGS="${sg[*]} --set paths.artifacts=sa-$i" bash run/slurm/ddptok-1node.sbatch) >"$T/sg-$i.txt" 2>&1 &
    pid=$!
    ( sleep 90; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
    trap_up "$pid"; sleep_ms "$d"; kill -USR1 "$pid"
    wait "$pid"; rc=$?; kill "$dog" 2>/dev/null
    (cd "$T" && one check-checkpoints --config configs/tiny.yaml "${sg[@]}" --set paths.artifacts=sa-$i >/dev/null 2>&1); ck=$?
    outcomes+=("${d}ms:$rc")
    if [ $rc -eq 0 ] && [ $ck -eq 0 ] && grep -q 'requeueing job 7' "$T/sg-$i.txt" && grep -qx 'requeue 7' "$T/scontrol.log"; then good=$((good + 1))
    else echo "       trial $i (${d} ms): exit $rc, check-checkpoints $ck:"; grep -v '^ ' "$T/sg-$i.txt" | tail -4 | sed 's/^/         /'; fi
  done
  [ $good -eq "$SIGNAL_TRIALS" ] \
    && ok "launch.sh: SIGUSR1 0..${SIGNAL_SPREAD_MS} ms after the batch shell started (prepare included), $SIGNAL_TRIALS trials: each checkpointed and requeued" \
    || bad "launch.sh: SIGUSR1 0..${SIGNAL_SPREAD_MS} ms after the batch shell started (prepare included), $SIGNAL_TRIALS trials: each checkpointed and requeued" "— $good of $SIGNAL_TRIALS (delay:exit ${outcomes[*]})"
}
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
      # slurmctld refuses an update while the requeue is still settling ("Unexpected message
      # received", "Invalid job id" under load): each update is retried, bounded.
      for f in "$@"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do sl scontrol update JobId="$j" "$f" >/dev/null 2>&1 && break; sleep 0.5; done
      done
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
#    uninterrupted W = 2 run: eps·(U − s)·max|θ| (docs/sampling.md "Elastic resume").
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
