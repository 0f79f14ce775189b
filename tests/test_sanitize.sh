# The commands and their failure paths under AddressSanitizer + UBSan (build/ddptok-asan,
# CPU-only): every exit code as expected and not one sanitizer report. Negative control: a
# deliberate heap overflow built with the same flags must be reported.
W=$(workdir); cd "$W"
ASAN="$ROOT/build/ddptok-asan"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mpicc -fsanitize=address,undefined -g -o canary "$ROOT/tests/asan_canary.c" 2>/dev/null
./canary > canary.txt 2>&1
grep -q 'AddressSanitizer: heap-buffer-overflow' canary.txt && ok "negative control: the sanitizer reports a planted heap overflow" \
  || { bad "sanitizer canary" "— no report:"; head -3 canary.txt; }
reports=0
san() {  # NAME RC CMD...: runs CMD, expects exit RC and no sanitizer report
  local name=$1 want=$2; shift 2
  OUT=$("$@" 2>&1); local rc=$?
  if grep -qE 'Sanitizer|runtime error:' <<<"$OUT"; then
    reports=$((reports + 1)); bad "asan: $name" "— sanitizer report:"; grep -E -A6 'ERROR|runtime error:' <<<"$OUT" | head -12
  elif [ $rc -ne "$want" ]; then bad "asan: $name" "— exit $rc, expected $want"; echo "$OUT" | tail -4
  else ok "asan: $name (exit $rc)"; fi
}
cfg="$CONFIGS/tiny.yaml"
run1() { timeout -k 5 300 "$ASAN" "$@"; }
runW() { local np=$1; shift; timeout -k 5 300 mpirun -np "$np" "$ASAN" "$@"; }
san "train before prepare" 2 runW 2 train --config "$cfg"
san "prepare" 0 run1 prepare --config "$cfg"
san "reference" 0 run1 reference --config "$cfg"
san "check-loss" 0 run1 check-loss --config "$cfg"
san "parity W=2" 0 runW 2 parity --config "$cfg"
san "check-empty W=2" 0 runW 2 check-empty --config "$cfg"
san "train (interrupted)" 0 runW 2 train --config "$cfg"
san "train --continuous" 0 runW 2 train --config "$cfg" --continuous
san "train --resume latest" 0 runW 2 train --config "$cfg" --resume latest
san "evaluate" 0 run1 evaluate --config "$cfg"
san "evaluate --protocol" 0 run1 evaluate --config "$cfg" --protocol
san "export" 0 run1 export --config "$cfg"
san "parity W=2, factored first layer" 0 runW 2 parity --config "$cfg" --set train.first_layer=factored
san "train --continuous, factored first layer" 0 runW 2 train --config "$cfg" --continuous --set train.first_layer=factored --set paths.artifacts=fact
san "evaluate, factored first layer" 0 run1 evaluate --config "$cfg" --checkpoint fact/continuous/step-0012 --set train.first_layer=factored
san "check-checkpoints" 0 run1 check-checkpoints --config "$cfg"
san "check-env W=2" 0 runW 2 check-env --config "$cfg"
san "exercise" 0 run1 exercise --config "$CONFIGS/exercise.yaml"
san "--resume of a directory that does not exist" 2 runW 2 train --config "$cfg" --resume no/such
san "a config that differs on rank 1" 2 timeout -k 5 300 mpirun -np 2 sh -c "exec '$ASAN' train --config '$cfg' --set train.optimizer.lr=0.\$((OMPI_COMM_WORLD_RANK + 1))"
rm -f outputs/logs/continuous/rank-1.log; mkdir outputs/logs/continuous/rank-1.log
san "rank 1 cannot write its log" 2 runW 2 train --config "$cfg" --continuous --fresh
rmdir outputs/logs/continuous/rank-1.log
w3=(--set train.world_size=3 --set train.rank_bands=auto --set train.loss_unit=sequence --set paths.outputs=o3)
san "prepare W=3" 0 run1 prepare --config "$cfg" "${w3[@]}"
san "reference W=3" 0 run1 reference --config "$cfg" "${w3[@]}"
san "parity W=3, sequence unit" 0 runW 3 parity --config "$cfg" "${w3[@]}"
san "a truncated corpus" 2 sh -c "head -c 1000 o3/data/corpus.h5 > c && mv c o3/data/corpus.h5 && exec '$ASAN' reference --config '$cfg' ${w3[*]}"
unset ASAN_OPTIONS UBSAN_OPTIONS
cd "$ROOT"; rm -rf "$W"
