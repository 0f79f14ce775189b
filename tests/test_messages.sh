# Messages: one line per failure. When every rank fails the same way (a config error, a bad
# --set, no corpus), the job prints the line once, naming the ranks; ranks that fail
# differently each print their own line; a rank that fails alone still ends the job. Under
# run/ddprun no Open MPI notice follows (plain mpirun shows it: the negative control).
# "Did you mean" for keys and commands; hints repeat the user's --config and --set, and
# following a hint works. `make` without its tools names the packages to install.
W=$(workdir); cd "$W"
cfg="$CONFIGS/tiny.yaml"
lines() { grep -c '^ddptok: ' <<<"$OUT"; }
DDPRUN="$ROOT/run/ddprun"
export DDPTOK
expect_rc "a bad --set on 2 ranks (run/ddprun): exit 2" 2 "$DDPRUN" -np 2 train --config "$cfg" --set train.update=3
expect_grep "... one line for ranks 0-1, with 'did you mean'" "^ddptok: ranks 0-1: error: --set train.update=3: unknown key 'train.update' \(did you mean 'train.updates'\?\)$" "$OUT"
[ "$(lines)" -eq 1 ] && ! grep -qE -- '^-----|mpirun detected|MPI_ABORT|Primary job' <<<"$OUT" \
  && ok "... and nothing else: no Open MPI notice" || { bad "ddprun output" "— more than the one line:"; echo "$OUT" | head -12 | sed 's/^/       /'; }
OUT=$(timeout 60 mpirun -np 2 "$DDPTOK" train --config "$cfg" --set train.update=3 2>&1)
grep -q 'mpirun detected that one or more processes exited with non-zero status' <<<"$OUT" && [ "$(lines)" -eq 1 ] \
  && ok "negative control: plain mpirun adds its notice (the one ddptok line is still one)" || { bad "plain mpirun control"; echo "$OUT" | head -4; }
expect_rc "3 ranks with the default bands" 2 "$DDPRUN" -np 3 train --config "$cfg"
expect_grep "... one line; the hint names both --set" '^ddptok: ranks 0-2: error: .*tiny.yaml: train.world_size is 2 but 3 ranks were started \(mpirun -np 2, or --set train.world_size=3 --set train.rank_bands=auto\)$' "$OUT"
expect_rc "-np 2 --set train.world_size=3" 2 "$DDPRUN" -np 2 check-env --config "$cfg" --set train.world_size=3
expect_grep "... the rank_bands error names the second --set" 'train.rank_bands: 2 bands for train.world_size 3 \(.*add --set train.rank_bands=auto for 3 contiguous bands over \[8, 24\]\)$' "$OUT"
expect_rc "... and following the hints works" 0 "$DDPRUN" -np 3 check-env --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto
# Ranks that fail differently: one line each (grouping only merges identical lines).
ranks() { OUT=$(timeout -k 5 60 mpirun -q -np 2 sh -c "R=\$OMPI_COMM_WORLD_RANK; exec '$DDPTOK' $1" 2>&1); }
ranks "check-env --config '$cfg' --set model.hidden=\$((R - 1))"; rc=$?
[ $rc -eq 2 ] && [ "$(lines)" -eq 2 ] && grep -q "^ddptok: rank 0: error: .*model.hidden: .*got -1" <<<"$OUT" && grep -q "^ddptok: rank 1: error: .*model.hidden: .*got 0 " <<<"$OUT" \
  && ok "different errors on ranks 0 and 1: one line each, each naming its rank" || { bad "different errors" "— exit $rc"; echo "$OUT" | head -4; }
# A rank that fails alone (the others wait in a collective) still ends the job, promptly.
t0=$SECONDS
ranks "check-env --config '$cfg' \$([ \$R = 1 ] && echo --set train.update=3)"; rc=$?
[ $rc -eq 2 ] && [ "$(grep -c '^ddptok: rank 1: ' <<<"$OUT")" -eq 1 ] && grep -q "^ddptok: rank 1: error: --set train.update=3: unknown key" <<<"$OUT" \
  && [ "$(grep -v '^ddptok: rank 0: error: stopping: rank 1 failed' <<<"$OUT" | grep -c '^ddptok: ')" -eq 1 ] && [ $((SECONDS - t0)) -lt 30 ] \
  && ok "a rank failing alone: its one line (rank 0 names it), exit 2, within $((SECONDS - t0)) s" || { bad "lone failure" "— exit $rc after $((SECONDS - t0)) s"; echo "$OUT" | head -4; }
# Did you mean: a command, a key in a YAML file.
expect_rc "a mistyped command" 2 one evalute --config "$cfg"
expect_grep "... did you mean" "^ddptok: error: unknown command 'evalute' \(did you mean 'evaluate'\? try: ddptok --help\)$" "$OUT"
expect_rc "an unrelated word is not 'corrected'" 2 one frobnicate --config "$cfg"
! grep -q 'did you mean' <<<"$OUT" && ok "... no suggestion for it" || bad "suggested a command for 'frobnicate'"
printf 'train:\n  updats: 3\n' > typo.yaml
expect_rc "a mistyped key in a config file" 2 one prepare --config typo.yaml
expect_grep "... file, line, key, suggestion" "^ddptok: error: typo.yaml:2: train.updats: unknown key \(did you mean 'train.updates'\?\)$" "$OUT"
# Hints repeat the user's overrides: after a data-lock mismatch, the suggested prepare line
# carries --set seed=5 (and a quoted path), and running it makes the job work.
sets=(--set seed=5 --set "paths.outputs=my out")
one prepare --config "$cfg" --set "paths.outputs=my out" >/dev/null
expect_rc "train on data prepared with another seed" 2 "$DDPRUN" -np 2 train --config "$cfg" "${sets[@]}"
expect_grep "... one line, the hint has every --set" "^ddptok: ranks 0-1: error: my out/data/corpus.h5: data lock .* run \`ddptok prepare --config $cfg --set seed=5 --set 'paths.outputs=my out'\`$" "$OUT"
hint=$(grep -o 'run `[^`]*`' <<<"$OUT" | sed 's/^run `ddptok //; s/`$//')
eval "one $hint" >/dev/null && ok "... running the suggested prepare line works" || bad "the suggested line failed: $hint"
expect_rc "... and then the same train runs" 0 "$DDPRUN" -np 2 train --config "$cfg" "${sets[@]}"
# run/ddprun adds only what is needed and says so.
expect_rc "run/ddprun -np 3 (2 cores here)" 0 "$DDPRUN" -np 3 check-env --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto
if [ "$(id -u)" -eq 0 ]; then expect_grep "... says it adds --allow-run-as-root (root)" '^ddprun: adding --allow-run-as-root' "$OUT"; fi
[ "$(nproc)" -lt 3 ] && expect_grep "... and --oversubscribe (3 ranks > $(nproc) cores)" "--oversubscribe \(3 ranks on $(nproc) cores\)" "$OUT"
OUT=$("$DDPRUN" -np 1 check-env --config "$cfg" --set train.world_size=1 --set train.rank_bands=auto 2>&1)
! grep -q oversubscribe <<<"$OUT" && ok "... no --oversubscribe for 1 rank" || bad "ddprun oversubscribed 1 rank"
# make without mpicc or a library: the packages to install, not a compiler error.
mkdir -p fakebin; printf '#!/bin/sh\nexit 1\n' > fakebin/dpkg-query; chmod +x fakebin/dpkg-query
OUT=$(PATH="$W/fakebin:$PATH" make -s -C "$ROOT" check-deps CC=no-such-mpicc 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q 'ddptok: cannot build: no-such-mpicc, pkg-config or a library' <<<"$OUT" \
  && grep -qE 'apt-get install -y --no-install-recommends build-essential pkg-config openmpi-bin libopenmpi-dev libhdf5-dev .*\(or: make deps\)' <<<"$OUT" \
  && ok "make without mpicc (and no packages): the apt-get line to run" || { bad "make check-deps" "— exit $rc"; echo "$OUT" | head -5; }
expect_rc "make check-deps where everything is installed" 0 make -s -C "$ROOT" check-deps
# As an ordinary user the remedy is one command that works on that machine: sudo where there
# is sudo, else su -c; with apt-get update first when apt does not know the packages yet (a
# fresh debootstrap); and --tests names the test packages (make test-deps, not make deps).
# A PATH of stubs only: id says uid 1000, dpkg-query knows nothing installed, apt-cache
# knows every package (or none), sudo is there or not.
mkdir -p nosudo withsudo
for d in nosudo withsudo; do
  for t in grep cat; do ln -sf "$(command -v $t)" "$d/$t"; done
  printf '#!/bin/sh\n[ "$1" = -u ] && echo 1000 || echo uid=1000\n' >"$d/id"
  printf '#!/bin/sh\nexit 1\n' >"$d/dpkg-query"
  printf '#!/bin/sh\n[ -n "$NO_LISTS" ] && exit 0\nshift; for p; do echo "$p:"; echo "  Candidate: 1.0-1"; done\n' >"$d/apt-cache"
  chmod +x "$d"/*
done
printf '#!/bin/sh\nexit 1\n' >withsudo/sudo; chmod +x withsudo/sudo
remedy() { OUT=$(PATH="$W/$1" /bin/bash "$ROOT/run/install-deps.sh" $2 2>&1); r="rc=$?"; line=$(grep '^  ' <<<"$OUT"); }
remedy withsudo ""
[ "$r" = rc=2 ] && [[ $line =~ ^\ \ sudo\ apt-get\ install\ -y\ --no-install-recommends\ build-essential\ .*python3$ ]] \
  && ok "install-deps as a user with sudo: one line, sudo apt-get install ... (exit 2)" || { bad "remedy with sudo" "— $r: $OUT"; }
remedy nosudo ""
[ "$r" = rc=2 ] && [[ $line =~ ^\ \ su\ -c\ \'apt-get\ install\ -y\ --no-install-recommends\ build-essential\ .*python3\' ]] && ! grep -q sudo <<<"${line%%(*}" \
  && ok "install-deps as a user without sudo: one line, su -c '...'" || { bad "remedy without sudo" "— $r: $OUT"; }
NO_LISTS=1 remedy withsudo --tests
[ "$r" = rc=2 ] && [[ $line =~ ^\ \ sudo\ sh\ -c\ \'apt-get\ update\ \&\&\ apt-get\ install\ -y\ --no-install-recommends\ .*python3-torch\ .*llvm-14\'$ ]] \
  && ok "install-deps --tests, package lists empty: sudo sh -c 'apt-get update && apt-get install ... the test packages'" || { bad "remedy with update" "— $r: $OUT"; }
OUT=$(PATH="$W/fakebin:$PATH" bash "$ROOT/run/install-deps.sh" --check --tests 2>&1)
grep -q '(or: make test-deps)$' <<<"$OUT" && grep -q 'python3-torch' <<<"$OUT" \
  && ok "install-deps --tests as root (--check) names make test-deps" || { bad "test-deps hint" "— $OUT"; }
cd "$ROOT"; rm -rf "$W"
