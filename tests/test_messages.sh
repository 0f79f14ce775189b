# Messages: one line per failure. When every rank fails the same way (a config error, a bad
# --set, no corpus), the job prints the line once, naming the ranks; ranks that fail
# differently each print their own line; a rank that fails alone still ends the job. Under
# run/ddprun no Open MPI notice follows (plain mpirun shows it: the negative control).
# "Did you mean" for keys and commands; hints repeat the user's --config and --set, and
# following a hint works. `make` without its tools names the packages to install.
cfg="$CONFIGS/tiny.yaml"
lines() { grep -c '^ddptok: ' <<<"$OUT"; }
DDPRUN="$ROOT/run/ddprun"
export DDPTOK
case_ddprun_bad_set() {
  expect_rc "a bad --set on 2 ranks (run/ddprun) is refused" 2 "$DDPRUN" -np 2 train --config "$cfg" --set train.update=3
  expect_grep "a bad --set on 2 ranks (run/ddprun): one line for ranks 0-1, with 'did you mean'" "^ddptok: ranks 0-1: error: --set train.update=3: unknown key 'train.update' \(did you mean 'train.updates'\?\)$" "$OUT"
  [ "$(lines)" -eq 1 ] && ! grep -qE -- '^-----|mpirun detected|MPI_ABORT|Primary job' <<<"$OUT" \
    && ok "a bad --set on 2 ranks (run/ddprun): nothing else, no Open MPI notice" || { bad "a bad --set on 2 ranks (run/ddprun): nothing else, no Open MPI notice" "— more than the one line:"; echo "$OUT" | head -12 | sed 's/^/       /'; }
}
case_plain_mpirun_notice() {
  OUT=$(timeout 60 mpirun -np 2 "$DDPTOK" train --config "$cfg" --set train.update=3 2>&1)
  grep -q 'mpirun detected that one or more processes exited with non-zero status' <<<"$OUT" && [ "$(lines)" -eq 1 ] \
    && ok "negative control: plain mpirun adds its notice (the one ddptok line is still one)" || { bad "negative control: plain mpirun adds its notice (the one ddptok line is still one)"; echo "$OUT" | head -4; }
}
case_default_bands_3_ranks() {
  expect_rc "3 ranks with the default bands (run/ddprun)" 2 "$DDPRUN" -np 3 train --config "$cfg"
  expect_grep "3 ranks with the default bands: one line; the hint names both --set" '^ddptok: ranks 0-2: error: .*tiny.yaml: train.world_size is 2 but 3 ranks were started \(mpirun -np 2, or --set train.world_size=3 --set train.rank_bands=auto\)$' "$OUT"
}
case_world_size_hint() {
  expect_rc "-np 2 --set train.world_size=3" 2 "$DDPRUN" -np 2 check-env --config "$cfg" --set train.world_size=3
  expect_grep "-np 2 --set train.world_size=3: the rank_bands error names the second --set" 'train.rank_bands: 2 bands for train.world_size 3 \(.*add --set train.rank_bands=auto for 3 contiguous bands over \[8, 24\]\)$' "$OUT"
  expect_rc "-np 2 --set train.world_size=3: following the hints works" 0 "$DDPRUN" -np 3 check-env --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto
}
# Ranks that fail differently: one line each (grouping only merges identical lines).
ranks() { OUT=$(timeout -k 5 60 mpirun -q -np 2 sh -c "R=\$OMPI_COMM_WORLD_RANK; exec '$DDPTOK' $1" 2>&1); }
case_different_errors() {
  local rc
  ranks "check-env --config '$cfg' --set model.hidden=\$((R - 1))"; rc=$?
  [ $rc -eq 2 ] && [ "$(lines)" -eq 2 ] && grep -q "^ddptok: rank 0: error: .*model.hidden: .*got -1" <<<"$OUT" && grep -q "^ddptok: rank 1: error: .*model.hidden: .*got 0 " <<<"$OUT" \
    && ok "different errors on ranks 0 and 1: one line each, each naming its rank" || { bad "different errors on ranks 0 and 1: one line each, each naming its rank" "— exit $rc"; echo "$OUT" | head -4; }
}
# A rank that fails alone (the others wait in a collective) still ends the job, promptly.
case_lone_failure() {
  local rc t0=$SECONDS
  ranks "check-env --config '$cfg' \$([ \$R = 1 ] && echo --set train.update=3)"; rc=$?
  [ $rc -eq 2 ] && [ "$(grep -c '^ddptok: rank 1: ' <<<"$OUT")" -eq 1 ] && grep -q "^ddptok: rank 1: error: --set train.update=3: unknown key" <<<"$OUT" \
    && [ "$(grep -v '^ddptok: rank 0: error: stopping: rank 1 failed' <<<"$OUT" | grep -c '^ddptok: ')" -eq 1 ] && [ $((SECONDS - t0)) -lt 30 ] \
    && ok "a rank failing alone: its one line (rank 0 names it), exit 2, within 30 s" "($((SECONDS - t0)) s)" || { bad "a rank failing alone: its one line (rank 0 names it), exit 2, within 30 s" "— exit $rc after $((SECONDS - t0)) s"; echo "$OUT" | head -4; }
}
# Did you mean: a command, a key in a YAML file.
case_mistyped_command() {
  expect_rc "a mistyped command" 2 one evalute --config "$cfg"
  expect_grep "a mistyped command: did you mean" "^ddptok: error: unknown command 'evalute' \(did you mean 'evaluate'\? try: ddptok --help\)$" "$OUT"
}
case_unrelated_word() {
  expect_rc "an unrelated word is not 'corrected'" 2 one frobnicate --config "$cfg"
  ! grep -q 'did you mean' <<<"$OUT" && ok "an unrelated word (frobnicate): no command suggested for it" || bad "an unrelated word (frobnicate): no command suggested for it"
}
case_mistyped_key() {
  printf 'train:\n  updats: 3\n' > typo.yaml
  expect_rc "a mistyped key in a config file" 2 one prepare --config typo.yaml
  expect_grep "a mistyped key in a config file: file, line, key, suggestion" "^ddptok: error: typo.yaml:2: train.updats: unknown key \(did you mean 'train.updates'\?\)$" "$OUT"
}
# Hints repeat the user's overrides: after a data-lock mismatch, the suggested prepare line
# carries --set seed=5 (and a quoted path), and running it makes the job work.
case_hints_repeat_sets() {
  local sets=(--set seed=5 --set "paths.outputs=my out") hint
  one prepare --config "$cfg" --set "paths.outputs=my out" >/dev/null
  expect_rc "train on data prepared with another seed" 2 "$DDPRUN" -np 2 train --config "$cfg" "${sets[@]}"
  expect_grep "train on data prepared with another seed: one line, the hint has every --set" "^ddptok: ranks 0-1: error: my out/data/corpus.h5: data lock .* run \`ddptok prepare --config $cfg --set seed=5 --set 'paths.outputs=my out'\`$" "$OUT"
  hint=$(grep -o 'run `[^`]*`' <<<"$OUT" | sed 's/^run `ddptok //; s/`$//')
  eval "one $hint" >/dev/null && ok "train on data prepared with another seed: running the suggested prepare line works" || bad "train on data prepared with another seed: running the suggested prepare line works" "— $hint"
  expect_rc "train on data prepared with another seed: after the suggested prepare, the same train runs" 0 "$DDPRUN" -np 2 train --config "$cfg" "${sets[@]}"
}
# run/ddprun adds only what is needed and says so.
case_ddprun_adds() {
  expect_rc "run/ddprun -np 3 (2 cores here)" 0 "$DDPRUN" -np 3 check-env --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto
  if [ "$(id -u)" -eq 0 ]; then expect_grep "run/ddprun as root says it adds --allow-run-as-root" '^ddprun: adding --allow-run-as-root' "$OUT"; fi
  [ "$(nproc)" -lt 3 ] && expect_grep "run/ddprun -np 3 on fewer cores says it adds --oversubscribe"  "--oversubscribe \(3 ranks on $(nproc) cores\)" "$OUT"
  OUT=$("$DDPRUN" -np 1 check-env --config "$cfg" --set train.world_size=1 --set train.rank_bands=auto 2>&1)
  ! grep -q oversubscribe <<<"$OUT" && ok "run/ddprun adds no --oversubscribe for 1 rank" || bad "run/ddprun adds no --oversubscribe for 1 rank"
}
# make without mpicc or a library: the packages to install, not a compiler error.
case_make_without_tools() {
  local rc
  mkdir -p fakebin; printf '#!/bin/sh\nexit 1\n' > fakebin/dpkg-query; chmod +x fakebin/dpkg-query
  OUT=$(PATH="$PWD/fakebin:$PATH" make -s -C "$ROOT" check-deps CC=no-such-mpicc 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -q 'ddptok: cannot build: no-such-mpicc, pkg-config or a library' <<<"$OUT" \
    && grep -qE 'apt-get install -y build-essential pkg-config openmpi-bin libopenmpi-dev libhdf5-dev .*\(or: make deps\)' <<<"$OUT" \
    && ok "make without mpicc (and no packages): the apt-get line to run" || { bad "make without mpicc (and no packages): the apt-get line to run" "— exit $rc"; echo "$OUT" | head -5; }
}
case_make_check_deps() {
  expect_rc "make check-deps where everything is installed" 0 make -s -C "$ROOT" check-deps
}
