# Faults. Ranks that disagree (a config edited on one node, an option given to one rank,
# artifacts on a disk only one rank sees): the job stops before the first step, exit 2,
# the odd rank naming the difference. A stopped rank — in training or at any other phase,
# from MPI start-up to MPI_Finalize: the others give up after --comm-timeout (exit 4).
# A config only one rank cannot read, a SIGUSR1 during start-up. A full disk: every writer stops with one line naming the file
# and the system's reason, exit 2 on every rank; nothing is published and what was already
# written stays byte for byte; no rank crashes (HDF5 used to, at exit, after a close that
# failed on the full disk: 1 run in ~15). The disk is a small tmpfs (needs root to mount).
cfg="$CONFIGS/minimum.yaml"
tcfg="$CONFIGS/tiny.yaml"
fixture_prepared() { one prepare --config "$cfg" >/dev/null; }
# ranks 'ARGS' — mpirun -np 2 with per-rank arguments ($R is the rank in ARGS).
ranks() { OUT=$(timeout -k 5 60 mpirun -np 2 sh -c "R=\$OMPI_COMM_WORLD_RANK; exec '$DDPTOK' $1" 2>&1); }
rank_pid() { for p in $(pgrep -f "$DDPTOK train"); do tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"; done; }

case_lr_differs() {
  fixture prepared || return
  local rc
  ranks "train --config '$cfg' --set train.optimizer.lr=0.\$((R + 1))"; rc=$?
  [ $rc -eq 2 ] && grep -q "^ddptok: rank 1: error: .*minimum.yaml: differs from rank 0's config at train.optimizer.lr: 0.2 vs 0.1" <<<"$OUT" \
    && grep -q "^ddptok: rank 0: error: stopping: rank 1 failed to agree with rank 0" <<<"$OUT" && ! grep -q 'step *1 ' <<<"$OUT" \
    && ok "a learning rate that differs on rank 1: exit 2 before step 1, rank 1 names the key and both values" \
    || { bad "a learning rate that differs on rank 1: exit 2 before step 1, rank 1 names the key and both values" "— exit $rc"; echo "$OUT" | tail -4; }
}
case_option_differs() {
  fixture prepared || return
  local rc
  ranks "train --config '$cfg' \$([ \$R = 1 ] && echo --continuous)"; rc=$?
  [ $rc -eq 2 ] && grep -q "^ddptok: rank 1: error: options differ from rank 0's: 'train --backend cpu --comm mpi --comm-timeout 300 --continuous' here" <<<"$OUT" \
    && ok "--continuous given to rank 1 only: exit 2, the options named" || { bad "--continuous given to rank 1 only: exit 2, the options named" "— exit $rc"; echo "$OUT" | tail -4; }
}
case_unshared_artifacts() {
  fixture prepared || return
  local rc
  ranks "train --config '$cfg' --set paths.artifacts=art\$R"; rc=$?
  [ $rc -eq 2 ] && grep -q "^ddptok: rank 0: error: art0/checkpoints/step-0050.tmp/rank-0001.h5: rank 1 wrote it, but rank 0 cannot see it: paths.artifacts must be on a file system that every rank shares" <<<"$OUT" \
    && [ -z "$(ls art0/checkpoints)" ] \
    && ok "artifacts that only one rank sees (paths may differ per rank): the checkpoint is refused, nothing published" \
    || { bad "artifacts that only one rank sees (paths may differ per rank): the checkpoint is refused, nothing published" "— exit $rc"; echo "$OUT" | grep ddptok | head -4; }
}
# A rank that stops without ending (SIGSTOP: what a hung file system or a swapping node
# looks like): the other rank gives up after --comm-timeout instead of hanging, exit 4.
case_stuck_rank() {
  local long=(--set train.updates=5000 --set train.interrupt_at=0 --set paths.outputs=stuck) pid dog r1 t0 rc t
  one prepare --config "$cfg" "${long[@]}" >/dev/null
  mpirun -np 2 "$DDPTOK" train --config "$cfg" "${long[@]}" --comm-timeout 3 > stuck.txt 2>&1 &
  pid=$!
  ( sleep 90; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
  wait_lines stuck/train/interrupted.jsonl 5 30
  r1=$(rank_pid 1)
  t0=$(date +%s); kill -STOP $r1
  wait "$pid"; rc=$?; t=$(( $(date +%s) - t0 ))
  kill "$dog" 2>/dev/null; kill -CONT $r1 2>/dev/null
  [ $rc -eq 4 ] && [ $t -le 15 ] && grep -q "^ddptok: rank 0: error: no progress in [a-z -]* at step [0-9]* on .* for 3 s (--comm-timeout): another rank is stuck or gone" stuck.txt \
    && ok "rank 1 stopped (SIGSTOP) in training: rank 0 names the operation and step, the job ends with exit 4 (--comm-timeout 3)" "(after ${t} s)" \
    || { bad "rank 1 stopped (SIGSTOP) in training: rank 0 names the operation and step, the job ends with exit 4 (--comm-timeout 3)" "— exit $rc after $t s"; grep ddptok stuck.txt | head -3; }
  gone "$DDPTOK train" 5 && ok "rank 1 stopped (SIGSTOP) in training: no rank left behind" \
    || { bad "rank 1 stopped (SIGSTOP) in training: no rank left behind" "— processes left"; pkill -9 -f "$DDPTOK train"; }
}
# While it waits, rank 0 sleeps between tests instead of spinning a core that its peer or
# other jobs need: over 2 s it uses under a quarter of the CPU time that a busy loop
# started beside it gets (a spinning wait gets about as much, however loaded the machine).
# Rank 1 stops itself where the gradient all-reduce begins (DDPTOK_TEST_STALL), so rank 0
# is in the deadline's wait: a SIGSTOP from outside can also land inside the blocking
# MPI_Allreduce after the barrier, where Open MPI's progress loop spins until the watchdog
# (docs/failure-model.md "Ranks that die or stall"), and made this check fail now and then.
case_waiting_rank_sleeps() {
  local pid r0 spin w0 s0 w1 s1 rc
  one prepare --config "$tcfg" --set paths.outputs=spin >/dev/null
  DDPTOK_TEST_STALL="gradient all-reduce" timeout -k 5 60 mpirun -np 2 "$DDPTOK" train --config "$tcfg" --set paths.outputs=spin \
    --set paths.artifacts=spina --comm-timeout 8 > spin.txt 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "TEST HOOK: stopping myself (SIGSTOP) at gradient all-reduce" spin.txt && break; sleep 0.1; done
  r0=$(rank_pid 0)
  cpu() { awk '{print $14 + $15}' /proc/"$1"/stat 2>/dev/null || echo 0; }
  sh -c 'while :; do :; done' & spin=$!
  sleep 0.3; w0=$(cpu "$r0") s0=$(cpu "$spin"); sleep 2; w1=$(cpu "$r0") s1=$(cpu "$spin")
  kill "$spin"; wait "$spin" 2>/dev/null
  wait "$pid"; rc=$?
  [ -n "$r0" ] && [ $rc -eq 4 ] && [ $(( 4 * (w1 - w0) )) -lt $(( s1 - s0 )) ] \
    && ok "rank 1 stopped at the gradient all-reduce: the waiting rank sleeps between tests; exit 4" "($((w1 - w0)) CPU ticks in 2 s, a busy loop beside it $((s1 - s0)))" \
    || { bad "rank 1 stopped at the gradient all-reduce: the waiting rank sleeps between tests; exit 4" "— $((w1 - w0)) CPU ticks in 2 s, a busy loop beside it $((s1 - s0)); exit $rc; rank 0 pid '$r0'"; grep ddptok spin.txt | head -3; }
  gone "$DDPTOK train" 5 || { bad "rank 1 stopped at the gradient all-reduce: no rank left behind" "— processes left"; pkill -9 -f "$DDPTOK train"; }
}
# Two runs of one lineage (a job submitted twice, a requeued job whose first incarnation
# has not ended): the second waits DDPTOK_LOCK_WAIT seconds, then is refused naming the
# holder; the first goes on untouched and releases the lock when it ends.
lk=(--set train.updates=5000 --set train.interrupt_at=0 --set paths.outputs=lk --set paths.artifacts=lka)
case_lineage_lock() {
  local pid dog rc
  one prepare --config "$cfg" "${lk[@]}" >/dev/null
  mpirun -np 2 "$DDPTOK" train --config "$cfg" "${lk[@]}" > first.txt 2>&1 &
  pid=$!
  ( sleep 120; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
  wait_lines lk/train/interrupted.jsonl 5 30
  DDPTOK_LOCK_WAIT=2 expect_rc "a second run of the same lineage is refused" 2 ddp 2 train --config "$cfg" "${lk[@]}"
  expect_grep "a second run of the same lineage: refused naming the lock and its holder" "^ddptok: rank 0: error: lka/checkpoints/.lock: held by pid [0-9]+ on [^ ]+: another .ddptok train. is writing this lineage" "$OUT"
  # The default wait (30 s) is cut to half of --comm-timeout: the other ranks wait for rank 0
  # in the next agreement, and a longer wait ended them with exit 4 instead of this message.
  expect_rc "a second run of the same lineage with --comm-timeout 2 and the default wait: refused (exit 2), not a comm failure" 2 \
    ddp 2 train --config "$cfg" "${lk[@]}" --comm-timeout 2
  expect_grep "a second run of the same lineage with --comm-timeout 2: refused naming the lock" "^ddptok: rank 0: error: lka/checkpoints/.lock: held by pid" "$OUT"
  DDPTOK_LOCK_WAIT=nan expect_rc "DDPTOK_LOCK_WAIT=nan: refused (exit 2)" 2 ddp 2 train --config "$cfg" "${lk[@]}"
  expect_grep "DDPTOK_LOCK_WAIT=nan: refused naming the variable" "DDPTOK_LOCK_WAIT=nan: expected a number of seconds" "$OUT"
  kill -USR1 "$pid"; wait "$pid"; rc=$?; kill "$dog" 2>/dev/null
  [ $rc -eq 75 ] && ls -d lka/checkpoints/step-* >/dev/null 2>&1 && ok "the lock's first run checkpointed and stopped as asked (exit 75), undisturbed by the refused ones" \
    || bad "the lock's first run checkpointed and stopped as asked (exit 75), undisturbed by the refused ones" "— exit $rc"
  /usr/bin/python3 -c "import fcntl; f = open('lka/checkpoints/.lock', 'r+'); fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)" \
    && ok "the lineage lock is released when its run ends" || bad "the lineage lock is released when its run ends"
}
# A holder's text is another process's words: terminal controls in it (here an OSC title
# sequence) reach the message as '?', never raw.
case_lock_holder_controls() {
  local holder
  one prepare --config "$cfg" "${lk[@]}" >/dev/null
  mkdir -p lka/checkpoints && : > lka/checkpoints/.lock
  /usr/bin/python3 -c "
import fcntl, time
f = open('lka/checkpoints/.lock', 'r+'); f.truncate(); f.write('\x1b]0;owned\x07 pid 1\n'); f.flush()
fcntl.lockf(f, fcntl.LOCK_EX); time.sleep(60)" & holder=$!
  sleep 1
  DDPTOK_LOCK_WAIT=1 expect_rc "a lock held with terminal controls in its holder text: refused" 2 ddp 2 train --config "$cfg" "${lk[@]}"
  ! grep -q $'\x1b' <<<"$OUT" && grep -q 'held by another process (the file, not written by ddptok, says: ?\]0;owned? pid 1): ' <<<"$OUT" && ok "a lock held with terminal controls in its holder text: the controls printed as '?', not raw" \
    || { bad "a lock held with terminal controls in its holder text: the controls printed as '?', not raw" "— $(grep -a 'held by' <<<"$OUT" | head -1 | cat -v)"; }
  kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
}
# Bounded everywhere: a rank that stops (SIGSTOP) at any phase — MPI start-up, the
# start-up agreement, a broadcast, the checkpoint's gather, MPI_Finalize — ends the job
# within --comm-timeout (3 s) plus a few, exit 4, the waiting rank naming the phase, and
# no process is left. DDPTOK_TEST_STALL=PHASE makes rank 1 stop itself there; for MPI
# start-up the rank is stopped before it execs ddptok.
fixture_st() { one prepare --config "$tcfg" --set paths.outputs=st >/dev/null; }
mp() { timeout -k 5 40 mpirun -np 2 "$@"; }
left() { pgrep -f "$DDPTOK train --config $tcfg" || true; }
stalled() {  # NAME PHASE-PATTERN CMD...: exit 4 within 12 s, the phase named, nothing left
  local name=$1 pat=$2; shift 2
  rm -rf st/train st/logs sta
  local t0; t0=$(date +%s%N)
  OUT=$(DDPTOK_TEST_TIMEOUT=40 "$@" 2>&1); local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 )) pids; pids=$(left)
  if [ $rc -eq 4 ] && [ $ms -le 12000 ] && grep -qE "^ddptok: rank 0: error: no progress in $pat on .* for 3 s \(--comm-timeout\): another rank is stuck or gone" <<<"$OUT" && [ -z "$pids" ]; then
    ok "rank 1 stopped at $name: exit 4 (--comm-timeout 3), rank 0 names it, no process left" "(after $ms ms)"
  else
    bad "rank 1 stopped at $name: exit 4 (--comm-timeout 3), rank 0 names it, no process left" "— exit $rc after $ms ms, left: '$pids'"; grep ddptok <<<"$OUT" | head -3 | sed 's/^/       /'
    [ -n "$pids" ] && kill -9 $pids
  fi
}
st=(--config "$tcfg" --set paths.outputs=st --set paths.artifacts=sta --comm-timeout 3)
case_stall_mpi_init() {
  fixture st || return
  stalled "MPI start-up" 'MPI start-up \(MPI_Init\)' \
    mp sh -c "[ \$OMPI_COMM_WORLD_RANK = 1 ] && kill -STOP \$\$; exec '$DDPTOK' train ${st[*]}"
}
# Rank 0 names the operation it waits in. At the first broadcast that can still be the
# start-up agreement just before it: rank 1 left that agreement once its own part was done,
# but its 4-byte message to rank 0 may still sit in its transport's send queue, pushed only
# by rank 1's next MPI call, which never comes (seen once in ~15 runs: "no progress in
# agreement"). Both names are the truth about rank 0; the bound is the same. Before the first
# window no message names a step (they said "at step 0"); the first agreement is start-up's.
stall_phase() {  # PHASE
  local phase=$1 pat="$1 at step [0-9]+"
  fixture st || return
  [ $phase = agreement ] && pat="the start-up agreement"
  [ $phase = broadcast ] && pat="(agreement|broadcast)"
  DDPTOK_TEST_STALL=$phase stalled "the first $phase" "$pat" mp "$DDPTOK" train "${st[@]}"
}
case_stall_agreement() { stall_phase agreement; }
case_stall_broadcast() { stall_phase broadcast; }
case_stall_gather() { stall_phase gather; }
# train.overlap: output-layer: rank 1 stops after starting the output layer's bucket, before
# the rest (rank 0 then waits in the head bucket's barrier, the tail still in flight).
# A rank stopped while `evaluate` computes: rank 0 names the evaluation's all-reduce and the
# split, not the trainer's "count all-reduce at step 0" (evaluate has no step).
case_stall_evaluate() {
  local ev=(--config "$tcfg" --set paths.outputs=ste --set paths.artifacts=stea --set data.splits.test=1000000) pid p r1= rc t0 t
  one prepare "${ev[@]}" >/dev/null && ddp 2 train "${ev[@]}" >/dev/null 2>&1 || { bad "stall_evaluate: prepare and train"; return; }
  DDPTOK_PROGRESS_SECONDS=0.2 timeout -k 5 60 mpirun -np 2 "$DDPTOK" evaluate "${ev[@]}" --comm-timeout 3 > ev.txt 2>&1 &
  pid=$!
  for ((t = 0; t < 300; t++)); do grep -q 'evaluate: sequences' ev.txt && break; sleep 0.05; done  # both ranks in the split
  for p in $(pgrep -f "$DDPTOK evaluate"); do tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && r1=$p; done
  t0=$(date +%s)
  kill -STOP "$r1"
  wait "$pid"; rc=$?; t=$(( $(date +%s) - t0 ))
  kill -CONT "$r1" 2>/dev/null
  [ $rc -eq 4 ] && [ $t -le 15 ] && grep -q "^ddptok: rank 0: error: no progress in the evaluation's all-reduce (test split: loss sums, tokens) on .* for 3 s (--comm-timeout)" ev.txt \
    && ok "rank 1 stopped (SIGSTOP) in evaluate: rank 0 names the evaluation's all-reduce of the test split, no step, exit 4" "(after ${t} s)" \
    || { bad "rank 1 stopped (SIGSTOP) in evaluate: rank 0 names the evaluation's all-reduce of the test split, no step, exit 4" "— exit $rc after $t s"; grep 'ddptok: rank 0' ev.txt | head -2 | sed 's/^/       /'; }
  gone "$DDPTOK evaluate" 5 || { bad "rank 1 stopped in evaluate: no rank left behind"; pkill -9 -f "$DDPTOK evaluate"; }
}
case_stall_bucket() {
  fixture st || return
  DDPTOK_TEST_STALL="gradient bucket" stalled "between the gradient buckets (train.overlap: output-layer)" "gradient all-reduce at step [0-9]+" \
    mp "$DDPTOK" train "${st[@]}" --set train.overlap=output-layer
  expect_grep "rank 1 stopped between the gradient buckets where it was meant to stop (the test hook)" "^ddptok: rank 1: TEST HOOK: stopping myself \(SIGSTOP\) at gradient bucket" "$OUT"
}
# train.overlap: blocks on a GPT (tiny.yaml's data, model.kind gpt): rank 1 stops after its
# tail bucket; rank 0 starts the block buckets and progresses them (neither waits), then
# waits in the barrier of wte and wpe's bucket.
case_stall_bucket_blocks() {
  fixture st || return
  DDPTOK_TEST_STALL="gradient bucket" stalled "between the gradient buckets (train.overlap: blocks, a GPT)" "gradient all-reduce at step [0-9]+" \
    mp "$DDPTOK" train "${st[@]}" --set model.kind=gpt --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=16 --set train.overlap=blocks
  expect_grep "rank 1 stopped after its tail bucket under blocks, where it was meant to stop (the test hook)" "^ddptok: rank 1: TEST HOOK: stopping myself \(SIGSTOP\) at gradient bucket" "$OUT"
}
case_stall_shutdown() {
  fixture st || return
  DDPTOK_TEST_STALL=shutdown stalled "shutdown (after the final checkpoint)" 'shutdown \(MPI_Finalize\)' mp "$DDPTOK" train "${st[@]}"
  [ -f sta/checkpoints/step-0006/SHA256SUMS ] && ok "rank 1 stopped at shutdown: the final checkpoint was published before" || bad "rank 1 stopped at shutdown: the final checkpoint was published before"
}
# A config that only rank 1 cannot read: every rank stops at once (exit 2), rank 1 names
# the file, rank 0 names rank 1 (it used to wait in MPI_Comm_dup forever).
case_config_unreadable_rank1() {
  fixture st || return
  local t0 rc ms
  t0=$(date +%s%N)
  OUT=$(timeout -k 5 40 mpirun -np 2 sh -c "exec '$DDPTOK' train --config \$([ \$OMPI_COMM_WORLD_RANK = 1 ] && echo no/such.yaml || echo '$tcfg') --set paths.outputs=st" 2>&1); rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $rc -eq 2 ] && [ $ms -le 10000 ] && grep -q "^ddptok: rank 1: error: no/such.yaml: cannot read config file: No such file or directory" <<<"$OUT" \
    && grep -q "^ddptok: rank 0: error: stopping: rank 1 failed to start" <<<"$OUT" \
    && ok "a config only rank 1 cannot read: exit 2 within 10 s, rank 1 names the file, rank 0 names rank 1" "(after $ms ms)" \
    || { bad "a config only rank 1 cannot read: exit 2 within 10 s, rank 1 names the file, rank 0 names rank 1" "— exit $rc after $ms ms"; grep ddptok <<<"$OUT" | head -3; }
}
# SIGUSR1 as soon as both ranks exist (they are loading or in MPI_Init; ~0.2 s after
# mpirun starts when the machine is idle): kept, not fatal — the ranks agree on it at the first window boundary, checkpoint step 1, exit 75.
case_sigusr1_startup() {
  fixture st || return
  local pid dog rc
  mpirun -np 2 "$DDPTOK" train "${st[@]}" --set train.interrupt_at=0 > early.txt 2>&1 &
  pid=$!
  ( sleep 60; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
  ranks_up "^$DDPTOK train" 2; kill -USR1 "$pid"
  wait "$pid"; rc=$?; kill "$dog" 2>/dev/null
  [ $rc -eq 75 ] && [ -f sta/checkpoints/step-0001/SHA256SUMS ] && grep -q "stop requested (SIGUSR1) — checkpointing at step 1 " early.txt \
    && ok "SIGUSR1 during start-up: step 1 checkpointed, exit 75 (not 138, not lost)" \
    || { bad "SIGUSR1 during start-up: step 1 checkpointed, exit 75 (not 138, not lost)" "— exit $rc, $(ls sta/checkpoints 2>/dev/null | tr '\n' ' ')"; grep -v '^ ' early.txt | head -3; }
}
# kill -9 of one rank at a random moment, 6 trials: the job ends within 5 s with no
# process left, every published checkpoint passes check-checkpoints, and --resume auto
# finishes the run bit-identical to an uninterrupted one.
k=(--config "$tcfg" --set paths.outputs=kk --set train.updates=8000 --set train.interrupt_at=0 --set train.checkpoint_every=250)
fixture_kref() { one prepare "${k[@]}" >/dev/null && ddp 2 train "${k[@]}" --set paths.artifacts=kref >/dev/null 2>&1; }  # the uninterrupted run
# Trial 6 runs with train.overlap: output-layer (a bucket may be in flight when the rank dies;
# at W = 2 its bits equal the blocking path's, so the resumed run still equals kref).
kill_trial() {  # TRIAL
  local trial=$1 pid dog r at victim t0 rc ms pids last crc d
  fixture kref || return
  rank_pid() { for p in $(pgrep -f "$DDPTOK train --config $tcfg"); do tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"; done; }
  local a=(--set paths.artifacts=kill$trial)
  [ $trial -eq 6 ] && a+=(--set train.overlap=output-layer)
  rm -rf kk/train kk/logs
  mpirun -np 2 "$DDPTOK" train "${k[@]}" "${a[@]}" > kill.txt 2>&1 &
  pid=$!
  ( sleep 60; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
  r=$((RANDOM % 2)) at=$((1 + RANDOM % 5000))  # a random rank, at a random step (the log polled every 0.1 s)
  wait_lines kk/train/interrupted.jsonl $at 30
  victim=$(rank_pid $r)
  t0=$(date +%s%N); [ -n "$victim" ] && kill -9 $victim
  wait "$pid"; rc=$?; ms=$(( ($(date +%s%N) - t0) / 1000000 )); kill "$dog" 2>/dev/null
  pids=$(pgrep -f "$DDPTOK train --config $tcfg")
  last=$(ls -d kill$trial/checkpoints/step-[0-9]* 2>/dev/null | grep -v tmp | tail -1)
  OUT=$(one check-checkpoints "${k[@]}" "${a[@]}" 2>&1); crc=$?
  [ -n "$victim" ] && [ $rc -ne 0 ] && [ $ms -le 5000 ] && [ -z "$pids" ] && { [ $crc -eq 0 ] || { [ -z "$last" ] && [ $crc -eq 2 ]; }; } \
    && ok "kill -9 trial $trial: the job ended within 5 s, no process left, the newest checkpoint valid" "(rank $r at step $at+: $ms ms, exit $rc; ${last:-no checkpoint})" \
    || { bad "kill -9 trial $trial: the job ended within 5 s, no process left, the newest checkpoint valid" "— rank $r at step $at+, pid '$victim', exit $rc after $ms ms, left '$pids', check-checkpoints $crc"; grep -v '^ ' <<<"$OUT" | tail -2; [ -n "$pids" ] && kill -9 $pids; }
  DDPTOK_TEST_TIMEOUT=60 ddp 2 train "${k[@]}" "${a[@]}" --resume auto >/dev/null 2>&1
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" kill$trial/checkpoints/step-8000 kref/checkpoints/step-8000) \
    && ok "kill -9 trial $trial: --resume auto finishes step 8000 bit-identical to the uninterrupted run" "(from ${last:-a fresh start})" \
    || bad "kill -9 trial $trial: --resume auto finishes step 8000 bit-identical to the uninterrupted run" "— $d"
}
case_kill_1() { kill_trial 1; }
case_kill_2() { kill_trial 2; }
case_kill_3() { kill_trial 3; }
case_kill_4() { kill_trial 4; }
case_kill_5() { kill_trial 5; }
case_kill_6_overlap() { kill_trial 6; }
# A non-finite loss stops the run: exit 1, rank 0 names the step and the rank; no checkpoint
# with a non-finite value is published (the ones before, every 2 steps, are finite). The
# divergence must not depend on the machine: lr = 1e6 alone stayed finite for all 6 steps
# on an Intel host (OpenBLAS SkylakeX kernel) while an AMD host overflowed; with weight
# decay 100 each update scales θ by about -1e8, so θ overflows by step 6 of 12 anywhere.
case_non_finite() {
  fixture st || return
  expect_rc "lr = 1e6: the run stops at the first non-finite window (exit 1)" 1 \
    ddp 2 train --config "$tcfg" --set paths.outputs=st --set paths.artifacts=nan --set train.optimizer.lr=1e6 \
    --set train.optimizer.weight_decay=100 --set train.interrupt_at=0 --set train.checkpoint_every=2
  expect_grep "lr = 1e6: rank 0 names the step and the rank of the non-finite window" '^ddptok: rank 0: error: step [0-9]+: non-finite (loss|gradient) (from rank [01]|after the gradient average).* nothing of this step is applied or published' "$OUT"
  /usr/bin/python3 - nan/checkpoints <<'PY' && ok "lr = 1e6: every published checkpoint is finite" || bad "lr = 1e6: every published checkpoint is finite"
import glob, sys, h5py, numpy as np
for f in glob.glob(sys.argv[1] + "/step-*/rank-*.h5"):
    h = h5py.File(f)
    for g in ("model", "optimizer/momentum"):
        for k in h[g]: assert np.isfinite(h[g][k][()]).all(), (f, g, k)
PY
}
# small_disk SIZE: a tmpfs of SIZE mounted on ./disk for this case (unmounted when it ends);
# where this machine cannot mount one, the case is skipped, visibly.
small_disk() {
  mkdir -p disk
  if ! mount -t tmpfs -o size="$1" tmpfs disk 2>/dev/null; then
    skip "$CASE: full-disk case" "cannot mount a tmpfs here (not root, or no mount permission)"; return 1
  fi
  trap 'cd "$CASE_DIR" && umount "$CASE_DIR/disk"' EXIT
}
one_line() {  # NAME PATTERN [N]: $OUT is exactly N ddptok lines (default 1), each matching PATTERN
  local n; n=$(grep -c '^ddptok: ' <<<"$OUT")
  if [ "$n" -eq "${3:-1}" ] && [ "$(grep -cE -- "$2" <<<"$OUT")" -eq "${3:-1}" ]; then ok "$1"
  else bad "$1" "— expected ${3:-1} line(s) matching /$2/, got:"; grep '^ddptok: ' <<<"$OUT" | head -4 | sed 's/^/       /'; fi
}
o=(--set paths.outputs=disk/o)
case_disk_full_prepare() {
  small_disk 400k || return
  local before
  one prepare --config "$cfg" "${o[@]}" >/dev/null  # 240 KiB of the 400 (uint16 tokens)
  before=$(cd disk/o/data && sha256sum *)
  expect_rc "disk full: prepare of other data fails" 2 one prepare --config "$cfg" "${o[@]}" --set seed=9
  one_line "disk full: prepare's one line names the file and the reason" '^ddptok: error: disk/o/data/corpus.h5: cannot write: No space left on device( \(the corpus needs [0-9.]+ [KM]iB, the file system has [0-9.]+ [KM]?i?B free\))?$'
  [ "$(cd disk/o/data && sha256sum *)" = "$before" ] && [ "$(ls disk/o/data)" = "$(printf 'corpus.h5\nplan.h5')" ] \
    && ok "disk full: the corpus and plan already there are intact, no temporary file left" || bad "disk full: the corpus and plan already there are intact, no temporary file left"
}
case_disk_full_reference() {
  small_disk 700k || return
  one prepare --config "$cfg" "${o[@]}" >/dev/null  # 240 KiB of the 700: reference.h5 (1.6 MB) does not fit
  expect_rc "disk full: reference fails" 2 one reference --config "$cfg" "${o[@]}"
  one_line "disk full: reference's one line names the file and the reason" '^ddptok: error: disk/o/reference.h5: cannot write: No space left on device$'
  [ ! -e disk/o/reference.h5 ] && [ "$(ls disk/o)" = data ] && ok "disk full: reference leaves nothing behind" || bad "disk full: reference leaves nothing behind"
}
# Checkpoints: the data elsewhere, the artifacts on the small disk.
case_disk_full_checkpoint() {
  fixture prepared || return
  small_disk 700k || return
  local p
  expect_rc "disk full at the step-50 checkpoint: every rank stops" 2 ddp 2 train --config "$cfg" --set paths.artifacts=disk/a
  p='^ddptok: rank [01]: error: disk/a/checkpoints/step-0050.tmp/rank-000[01].h5: cannot write: No space left on device$'
  [ "$(grep -cE -- "$p" <<<"$OUT")" -eq 2 ] && [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 3 ] \
    && grep -q '^ddptok: rank 0: error: step 50: checkpoint disk/a/checkpoints/step-0050 not written; nothing was published$' <<<"$OUT" \
    && ok "disk full at the step-50 checkpoint: each rank names its file and the reason, rank 0 says nothing was published" \
    || { bad "disk full at the step-50 checkpoint: each rank names its file and the reason, rank 0 says nothing was published"; grep '^ddptok: ' <<<"$OUT" | head -5 | sed 's/^/       /'; }
  [ -z "$(ls disk/a/checkpoints)" ] && ok "disk full at the step-50 checkpoint: no checkpoint directory, published or temporary, is left" \
    || bad "disk full at the step-50 checkpoint: no checkpoint directory, published or temporary, is left" "— $(ls disk/a/checkpoints)"
  expect_rc "disk full at the step-50 checkpoint: check-checkpoints then finds no checkpoint" 2 one check-checkpoints --config "$cfg" --set paths.artifacts=disk/a
  expect_grep "disk full at the step-50 checkpoint: check-checkpoints says there is none" 'no checkpoint under disk/a' "$OUT"
}
# Room for one checkpoint (3.2 MB) but not two: the resumed run's final checkpoint fails,
# the step-50 one it resumed from stays valid and resumable.
case_disk_full_final_checkpoint() {
  fixture prepared || return
  small_disk 5m || return
  local sums
  ddp 2 train --config "$cfg" --set paths.artifacts=disk/a >/dev/null 2>&1
  sums=$(cd disk/a/checkpoints/step-0050 && sha256sum *)
  expect_rc "disk full at the final checkpoint of a resumed run: every rank stops" 2 \
    ddp 2 train --config "$cfg" --set paths.artifacts=disk/a --resume latest
  [ "$(ls disk/a/checkpoints)" = step-0050 ] && [ "$(cd disk/a/checkpoints/step-0050 && sha256sum *)" = "$sums" ] \
    && ok "disk full at the final checkpoint: step-0050 is byte for byte what it was, nothing else is left" || bad "disk full at the final checkpoint: step-0050 is byte for byte what it was, nothing else is left" "— $(ls disk/a/checkpoints)"
  expect_rc "disk full at the final checkpoint: step-0050 still passes check-checkpoints" 0 one check-checkpoints --config "$cfg" --set paths.artifacts=disk/a
  mount -o remount,size=10m "$PWD/disk"
  expect_rc "disk full at the final checkpoint: with room again, --resume latest finishes the run" 0 ddp 2 train --config "$cfg" --set paths.artifacts=disk/a --resume latest
}
# The best validation checkpoint on a full disk: every evaluation's best write fails, each one
# warning; the JSONL then says "best": false with a "best_error" (never true: artifacts/best is
# not that step's) and the progress line "best not written"; the run goes on to its final
# checkpoint, which fails there too (exit 2, nothing published). Control: the same run with
# room says "best": true on the improving evaluations, without best_error.
best_lines() {  # MODE (written | unwritten): the JSONL's evaluations say so
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open("outputs/train/interrupted.jsonl")]
ev = [r for r in ev if "validation" in r]
assert len(ev) >= 5, len(ev)
if sys.argv[1] == "unwritten":
    assert all(r.get("best") is False and "not written" in r.get("best_error", "") for r in ev), ev
else:
    assert any(r.get("best") is True for r in ev) and not any("best_error" in r for r in ev), ev
print(len(ev), "evaluations")
PY
}
case_disk_full_best() {
  local run=(--config "$tcfg" --set train.optimizer.lr=3 --set train.interrupt_at=0 --set train.eval_every=2 --set train.keep_best=true) n
  one prepare --config "$tcfg" >/dev/null
  small_disk 256k || return
  dd if=/dev/zero of=disk/spare bs=4k count=8 2>/dev/null; dd if=/dev/zero of=disk/fill bs=4k 2>/dev/null; rm disk/spare  # 32 KiB left
  expect_rc "disk full at the best checkpoint: the run goes on, then its final checkpoint fails (exit 2)" 2 ddp 2 train "${run[@]}" --set paths.artifacts=disk/a
  n=$(grep -c '^ddptok: rank 0: warning: step [0-9]*: the best validation checkpoint disk/a/best not written; the run goes on$' <<<"$OUT")
  [ "$n" -ge 5 ] && grep -q '^ddptok: rank 0: error: step 12: checkpoint disk/a/checkpoints/step-0012 not written; nothing was published$' <<<"$OUT" \
    && ok "disk full at the best checkpoint: one warning per evaluation, the run reaches step 12" "($n warnings)" \
    || bad "disk full at the best checkpoint: one warning per evaluation, the run reaches step 12" "— $n warnings"
  n=$(best_lines unwritten) && ok "disk full at the best checkpoint: every evaluation's JSONL line says \"best\": false with best_error" "($n)" \
    || bad "disk full at the best checkpoint: every evaluation's JSONL line says \"best\": false with best_error" "— $n"
  grep -qE 'val [0-9.]+ \([0-9.]+ bits/token\)  best not written$' <<<"$OUT" && ! grep -qE '  best$' <<<"$OUT" \
    && ok "disk full at the best checkpoint: the progress line says best not written, never best" \
    || bad "disk full at the best checkpoint: the progress line says best not written, never best"
  [ ! -e disk/a/best ] && [ ! -e disk/a/best.tmp ] && [ ! -e disk/a/best.json ] && ok "disk full at the best checkpoint: no best, temporary or best.json left" \
    || bad "disk full at the best checkpoint: no best, temporary or best.json left" "— $(ls -a disk/a)"
  expect_rc "control: the same run with room" 0 ddp 2 train "${run[@]}" --set paths.artifacts=roomy
  n=$(best_lines written) && ok "control: with room the improving evaluations say \"best\": true, none best_error" "($n)" \
    || bad "control: with room the improving evaluations say \"best\": true, none best_error" "— $n"
  grep -qE '  best$' <<<"$OUT" && ! grep -q 'best not written' <<<"$OUT" && ok "control: with room the progress line says best" \
    || bad "control: with room the progress line says best"
}
# Training logs on a full disk: a JSONL or rank-log line that does not reach the disk
# stops every rank, exit 2, the rank naming the file (it used to end 0 with lines lost).
case_disk_full_logs() {
  small_disk 128k || return
  local tl=(--config "$tcfg" --set paths.outputs=disk/t --set paths.artifacts=ta --set train.updates=600 --set train.interrupt_at=0)
  one prepare "${tl[@]}" >/dev/null  # ~45 KiB of the 128: the logs fill the rest within ~150 steps
  expect_rc "disk full while training logs are written: every rank stops" 2 ddp 2 train "${tl[@]}"
  expect_grep "disk full while training logs are written: the rank names the log file and the reason" '^ddptok: rank [01]: error: disk/t/(train/interrupted.jsonl|logs/interrupted/rank-[01].log): cannot write: No space left on device$' "$OUT"
  [ ! -e ta/checkpoints/step-0600 ] && ok "disk full while training logs are written: the run did not go on to publish its final checkpoint" \
    || bad "disk full while training logs are written: the run did not go on to publish its final checkpoint"
}
