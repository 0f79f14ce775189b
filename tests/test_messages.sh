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
  expect_rc "3 ranks with the default bands (run/ddprun)" 2 "$DDPRUN" -np 3 check-env --config "$cfg"
  expect_grep "3 ranks with the default bands: one line; the hint is the run/ddprun line, then both --set" '^ddptok: ranks 0-2: error: .*tiny.yaml: train.world_size is 2 but 3 ranks were started: run `[^`]*run/ddprun -np 2 check-env --config [^`]*tiny.yaml`, or set train.world_size: auto \(the ranks launched\) with train.rank_bands: auto \(--set train.world_size=auto --set train.rank_bands=auto\)$' "$OUT"
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && ok "3 ranks with the default bands: nothing but that line from ddptok (no SIGTERM notice of mpirun's ending)" \
    || bad "3 ranks with the default bands: nothing but that line from ddptok (no SIGTERM notice of mpirun's ending)" "— $(grep '^ddptok: ' <<<"$OUT" | tail -2)"
  local hint; hint=$(sed -n 's/.*: run `\([^`]*\)`, or set.*/\1/p' <<<"$OUT")
  expect_rc "3 ranks with the default bands: the printed run/ddprun line runs as printed" 0 bash -c "$hint"
  expect_rc "3 ranks with the default bands: the printed --set pair runs with -np 3" 0 "$DDPRUN" -np 3 check-env --config "$cfg" --set train.world_size=auto --set train.rank_bands=auto
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
  # `try: ddptok --help` did not run where the binary is not on PATH (a checkout): the binary as invoked
  expect_grep "a mistyped command: did you mean, and the help as this binary is named" "^ddptok: error: unknown command 'evalute' \(did you mean 'evaluate'\? try: ${DDPTOK//./\\.} --help\)$" "$OUT"
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
  expect_grep "train on data prepared with another seed: one line, the hint has every --set" "^ddptok: ranks 0-1: error: my out/data/corpus.h5: (data|corpus) lock .* run \`$DDPTOK prepare --config $cfg --set seed=5 --set 'paths.outputs=my out'\`$" "$OUT"
  hint=$(grep -o 'run `[^`]*`' <<<"$OUT" | sed 's/^run `//; s/`$//')
  timeout -k 5 120 bash -c "$hint" >/dev/null && ok "train on data prepared with another seed: the suggested prepare line with every --set runs as printed" \
    || bad "train on data prepared with another seed: the suggested prepare line with every --set runs as printed" "— failed: $hint"
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
# (As root, whoever runs the test: a stub id says uid 0 — an ordinary user gets the su/sudo
# form, checked below; dpkg-query knows nothing installed.)
fixture_root_stubs() {
  mkdir -p fakebin; printf '#!/bin/sh\nexit 1\n' > fakebin/dpkg-query
  printf '#!/bin/sh\n[ "$1" = -u ] && echo 0 || echo uid=0\n' > fakebin/id; chmod +x fakebin/dpkg-query fakebin/id
}
case_make_without_tools() {
  local rc
  fixture root_stubs || return
  OUT=$(PATH="$PWD/fakebin:$PATH" make -s -C "$ROOT" check-deps CC=no-such-mpicc 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -q 'ddptok: cannot build: no-such-mpicc, pkg-config or a library' <<<"$OUT" \
    && grep -qE '^  apt-get install -y --no-install-recommends build-essential pkg-config openmpi-bin libopenmpi-dev libhdf5-dev [a-z0-9 .+-]*$' <<<"$OUT" && grep -q '(or: make deps):$' <<<"$OUT" \
    && ok "make without mpicc (and no packages): the apt-get line to run" || { bad "make without mpicc (and no packages): the apt-get line to run" "— exit $rc"; echo "$OUT" | head -5; }
}
case_make_check_deps() {
  expect_rc "make check-deps where everything is installed" 0 make -s -C "$ROOT" check-deps
}
# As an ordinary user the remedy is one command that works on that machine: sudo where there
# is sudo, else su -c; with apt-get update first when apt does not know the packages yet (a
# fresh debootstrap); and --tests names the test packages (make test-deps, not make deps).
# A PATH of stubs only: id says uid 1000, dpkg-query knows nothing installed, apt-cache
# knows every package (or none), sudo is there or not.
fixture_remedy_stubs() {
  local d t
  mkdir -p nosudo withsudo
  for d in nosudo withsudo; do
    for t in grep cat; do ln -sf "$(command -v $t)" "$d/$t"; done
    printf '#!/bin/sh\n[ "$1" = -u ] && echo 1000 || echo uid=1000\n' >"$d/id"
    printf '#!/bin/sh\nexit 1\n' >"$d/dpkg-query"
    printf '#!/bin/sh\n[ -n "$NO_LISTS" ] && exit 0\nshift; for p; do echo "$p:"; echo "  Candidate: 1.0-1"; done\n' >"$d/apt-cache"
    chmod +x "$d/id" "$d/dpkg-query" "$d/apt-cache"  # not the links: chmod follows them (as root: /usr/bin/grep)
  done
  printf '#!/bin/sh\nexit 1\n' >withsudo/sudo; chmod +x withsudo/sudo
}
remedy() { OUT=$(PATH="$PWD/$1" /bin/bash "$ROOT/run/install-deps.sh" $2 2>&1); r="rc=$?"; line=$(grep '^  ' <<<"$OUT"); }
# paste LINE: the remedy line as a user pastes it, whole, into bash (stdin), with stub sudo and
# su that record their arguments: 0 when bash ran exactly one of them, with the apt-get line.
paste_line() {
  mkdir -p pastebin
  printf '#!/bin/sh\nprintf "%%s\\n" "$(basename "$0")" "$@" > "$PWD/pasted.args"\n' >pastebin/sudo
  cp pastebin/sudo pastebin/su; chmod +x pastebin/sudo pastebin/su
  rm -f pasted.args
  printf '%s\n' "$1" | PATH="$PWD/pastebin:/usr/bin:/bin" /bin/bash 2>paste.err && [ -f pasted.args ] && [ ! -s paste.err ]
}
case_install_deps_with_sudo() {
  fixture remedy_stubs || return
  local r line
  remedy withsudo ""
  [ "$r" = rc=2 ] && [[ $line =~ ^\ \ sudo\ apt-get\ install\ -y\ --no-install-recommends\ build-essential\ .*python3$ ]] \
    && ok "install-deps as a user with sudo: one line, sudo apt-get install ..." "(exit 2)" || bad "install-deps as a user with sudo: one line, sudo apt-get install ..." "— $r: $OUT"
  paste_line "$line" && [ "$(sed -n 1,2p pasted.args | tr '\n' ' ')" = "sudo apt-get " ] \
    && ok "install-deps with sudo: the line pasted whole into bash runs sudo apt-get install" \
    || bad "install-deps with sudo: the line pasted whole into bash runs sudo apt-get install" "— $(cat paste.err pasted.args 2>/dev/null | head -3)"
}
case_install_deps_without_sudo() {
  fixture remedy_stubs || return
  local r line
  remedy nosudo ""
  [ "$r" = rc=2 ] && [[ $line =~ ^\ \ su\ -c\ \'apt-get\ install\ -y\ --no-install-recommends\ build-essential\ .*python3\'$ ]] && ! grep -q sudo <<<"$line" \
    && ok "install-deps as a user without sudo: one line, su -c 'apt-get install …'" || bad "install-deps as a user without sudo: one line, su -c 'apt-get install …'" "— $r: $OUT"
  # The line as pasted: whole, into bash. It was `su -c '…'     (as root; this machine has no sudo)`: a syntax error.
  paste_line "$line" && [ "$(sed -n 1,2p pasted.args | tr '\n' ' ')" = "su -c " ] && grep -q '^apt-get install -y --no-install-recommends build-essential .*python3$' pasted.args \
    && ok "install-deps without sudo: the su line pasted whole into bash runs su -c with the apt-get line" \
    || bad "install-deps without sudo: the su line pasted whole into bash runs su -c with the apt-get line" "— $(cat paste.err pasted.args 2>/dev/null | head -3)"
  expect_grep "install-deps without sudo: says what to do where root has no password" 'root has no password.*run the part between the quotes as root another way' "$OUT"
}
case_install_deps_tests_update() {
  fixture remedy_stubs || return
  local r line
  NO_LISTS=1 remedy withsudo --tests
  [ "$r" = rc=2 ] && [[ $line =~ ^\ \ sudo\ sh\ -c\ \'apt-get\ update\ \&\&\ apt-get\ install\ -y\ --no-install-recommends\ .*python3-torch\ .*llvm-14( [a-z0-9.+-]+)*\'$ ]] \
    && ok "install-deps --tests, package lists empty: sudo sh -c 'apt-get update && apt-get install ... the test packages'" \
    || bad "install-deps --tests, package lists empty: sudo sh -c 'apt-get update && apt-get install ... the test packages'" "— $r: $OUT"
}
case_install_deps_tests_root() {
  fixture root_stubs || return
  OUT=$(PATH="$PWD/fakebin:$PATH" bash "$ROOT/run/install-deps.sh" --check --tests 2>&1)  # as root (stub id)
  grep -q '(or: make test-deps):$' <<<"$OUT" && grep -q 'python3-torch' <<<"$OUT" \
    && ok "install-deps --tests as root (--check) names make test-deps" || bad "install-deps --tests as root (--check) names make test-deps" "— $OUT"
  local line; line=$(grep '^  ' <<<"$OUT")
  paste_line "sudo() { \"\$@\"; }; apt-get() { printf '%s\\n' apt-get \"\$@\" > pasted.args; }; $line" && grep -q '^python3-torch$' pasted.args \
    && ok "install-deps as root: the line pasted whole into bash is the apt-get command alone" \
    || bad "install-deps as root: the line pasted whole into bash is the apt-get command alone" "— $(cat paste.err 2>/dev/null | head -3) [$line]"
}

# The newcomer's path (README "Everyday use") in a fresh checkout's layout — ./ddptok and
# run/ddprun beside it, every command typed from there as the README types it — following
# every hint ddptok prints: each command is taken from the message (run `...`) and run as
# printed, from the same directory, with no ddptok on PATH and no DDPTOK for ddprun.
# hint_of TEXT [N]: the Nth command TEXT tells the user to run.
hint_of() { grep -o 'run `[^`]*`' <<<"$1" | sed -n "${2:-1}p" | sed 's/^run `//; s/`$//'; }
# follow NAME WANT TEXT [N]: runs the Nth hint of TEXT as printed (output in $OUT); its exit must be WANT.
follow() {
  local name=$1 want=$2 cmd; cmd=$(hint_of "$3" "${4:-1}")
  if [ -z "$cmd" ]; then bad "$name" "— no run \`...\` in:"; echo "$3" | tail -4 | sed 's/^/       /'; OUT=; return 1; fi
  OUT=$(timeout -k 5 120 bash -c "$cmd" 2>&1); local rc=$?
  if [ $rc -eq "$want" ]; then ok "$name" "(\`$cmd\`, exit $rc)"; return 0; fi
  bad "$name" "— \`$cmd\`: exit $rc, expected $want:"; echo "$OUT" | tail -6 | sed 's/^/       /'; return 1
}
case_newcomer_path() {
  local N=$PWD rc next metrics verdict want
  mkdir run && cp "$ROOT/ddptok" ./ddptok && cp "$ROOT/run/ddprun" run/ddprun && cp "$CONFIGS/tiny.yaml" tiny.yaml
  unset DDPTOK
  export PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$ROOT" | paste -sd: -)
  expect_rc "newcomer: reference before prepare is refused" 2 ./ddptok reference --config tiny.yaml
  [ "$(hint_of "$OUT")" = "./ddptok prepare --config tiny.yaml" ] && ok "newcomer: the prepare hint names ./ddptok as invoked, with --config" \
    || bad "newcomer: the prepare hint names ./ddptok as invoked, with --config" "— '$(hint_of "$OUT")'"
  OUT=$(bash -c "ddptok prepare --config tiny.yaml" 2>&1); rc=$?
  [ $rc -eq 127 ] && ok "newcomer, negative control: the former hint \`ddptok prepare --config tiny.yaml\` is not found here" "(exit 127)" \
    || bad "newcomer, negative control: the former hint \`ddptok prepare --config tiny.yaml\` is not found here" "— exit $rc (ddptok on PATH?)"
  follow "newcomer: the prepare hint runs" 0 "$(./ddptok reference --config tiny.yaml 2>&1)"
  expect_rc "newcomer: parity before reference is refused" 2 run/ddprun -np 2 parity --config tiny.yaml
  follow "newcomer: the reference hint runs" 0 "$OUT"
  expect_rc "newcomer: parity after following both hints" 0 run/ddprun -np 2 parity --config tiny.yaml
  expect_rc "newcomer: evaluate before any training is refused" 2 ./ddptok evaluate --config tiny.yaml
  [ "$(hint_of "$OUT")" = "run/ddprun -np 2 train --config tiny.yaml" ] && ok "newcomer: the train hint names run/ddprun -np 2 (a checkout)" \
    || bad "newcomer: the train hint names run/ddprun -np 2 (a checkout)" "— '$(hint_of "$OUT")'"
  follow "newcomer: the train hint runs (interrupted at step 6)" 0 "$OUT"
  next=$OUT
  expect_grep "newcomer: an interrupted train says how to continue, in one line" '^train: to continue to step 12, run `run/ddprun -np 2 train --config tiny.yaml --resume latest`$' "$next"
  expect_rc "newcomer: train again on the interrupted lineage is refused" 2 run/ddprun -np 2 train --config tiny.yaml
  [ "$(hint_of "$OUT")" = "$(hint_of "$next")" ] && [ "$(hint_of "$OUT" 2)" = "run/ddprun -np 2 train --config tiny.yaml --fresh" ] \
    && ok "newcomer: the refusal names the same resume command, and --fresh" || bad "newcomer: the refusal names the same resume command, and --fresh" "— $OUT"
  follow "newcomer: the resume hint runs (to step 12)" 0 "$next"
  follow "newcomer: the evaluate hint after the finished train runs" 0 "$OUT"
  metrics=$OUT
  follow "newcomer: evaluate's hint to the protocol's verdict runs (incomplete: exit 1)" 1 "$metrics"
  verdict=$OUT
  [ "$(grep -c 'run `' <<<"$verdict")" -eq 2 ] && [ "$(sed -n '/run `/=' <<<"$verdict" | head -1)" -gt "$(sed -n '/^  test loss [0-9]/=' <<<"$verdict")" ] \
    && ok "newcomer: the verdict names the 2 missing parts once each, after the metrics" || { bad "newcomer: the verdict names the 2 missing parts once each, after the metrics"; echo "$verdict" | sed 's/^/       /'; }
  follow "newcomer: the continuous-run hint of the verdict runs" 0 "$verdict" 1
  follow "newcomer: the check-empty hint of the verdict runs" 0 "$verdict" 2
  expect_rc "newcomer: evaluate --protocol after following every hint" 0 ./ddptok evaluate --config tiny.yaml --protocol
  expect_rc "newcomer: --resume latest on the finished lineage is refused" 2 run/ddprun -np 2 train --config tiny.yaml --resume latest
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && grep -q '^ddptok: ranks 0-1: error: --resume latest: artifacts/checkpoints/step-0012 is step 12 of 12: this lineage is finished' <<<"$OUT" \
    && ok "newcomer: the finished --resume latest is one line for ranks 0-1 (was one line per rank)" || { bad "newcomer: the finished --resume latest is one line for ranks 0-1 (was one line per rank)"; echo "$OUT" | sed 's/^/       /'; }
  follow "newcomer: the finished lineage's evaluate hint runs" 0 "$OUT"
  # Outside a checkout (no run/ddprun beside the binary): mpirun with the flags this machine
  # needs, run as printed without Open MPI's root variables.
  mkdir bin && cp ./ddptok bin/ddptok
  expect_rc "installed binary: train on the finished lineage is refused" 2 mpirun -np 2 bin/ddptok train --config tiny.yaml
  want="mpirun$([ "$(id -u)" -eq 0 ] && echo ' --allow-run-as-root')$([ "$(nproc)" -lt 2 ] && echo ' --oversubscribe') -np 2 bin/ddptok train --config tiny.yaml --fresh"
  [ "$(hint_of "$OUT" 2)" = "$want" ] && ok "installed binary: the hint is the mpirun line this machine needs" "(\`$want\`)" \
    || bad "installed binary: the hint is the mpirun line this machine needs" "— '$(hint_of "$OUT" 2)', expected '$want'"
  OUT=$(env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM timeout -k 5 120 bash -c "$want" 2>&1) \
    && ok "installed binary: the mpirun hint runs as printed" || { bad "installed binary: the mpirun hint runs as printed"; echo "$OUT" | tail -4 | sed 's/^/       /'; }
  OUT=$(PATH="$N/bin:$PATH" ddptok evaluate --config tiny.yaml 2>&1)
  [ "$(hint_of "$OUT")" = "ddptok evaluate --config tiny.yaml --protocol" ] && ok "on PATH: the hint names plain ddptok" || bad "on PATH: the hint names plain ddptok" "— '$(hint_of "$OUT")'"
}
# Hints repeat --backend, --comm and --comm-timeout as the user gave them, and name the
# installed launcher (make install's layout: bin/ddprun beside bin/ddptok) as this user can
# run it; each hint runs as printed. Negative controls: the same command without those
# options gets a hint without them, and the binary alone (no ddprun beside it) gets mpirun,
# which the same checks reject.
case_hints_options_installed() {
  local want
  mkdir -p inst/bin alone && cp "$ROOT/ddptok" "$ROOT/run/ddprun" inst/bin/ && cp "$ROOT/ddptok" alone/ && cp "$CONFIGS/tiny.yaml" tiny.yaml
  unset DDPTOK
  export PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$ROOT" | paste -sd: -)
  expect_rc "installed: prepare" 0 inst/bin/ddptok prepare --config tiny.yaml
  expect_rc "installed: evaluate before training is refused" 2 inst/bin/ddptok evaluate --config tiny.yaml --backend cpu --comm-timeout 60
  want="inst/bin/ddprun -np 2 train --config tiny.yaml --backend cpu --comm-timeout 60"
  [ "$(hint_of "$OUT")" = "$want" ] && ok "installed: the train hint names bin/ddprun and repeats --backend, --comm-timeout" "(\`$want\`)" \
    || bad "installed: the train hint names bin/ddprun and repeats --backend, --comm-timeout" "— '$(hint_of "$OUT")', expected '$want'"
  follow "installed: the train hint runs as printed" 0 "$OUT"
  OUT=$(PATH="$PWD/inst/bin:$PATH" ddptok export --config tiny.yaml --comm mpi --set paths.artifacts=empty 2>&1)
  want="ddprun -np 2 train --config tiny.yaml --set paths.artifacts=empty --comm mpi"
  [ "$(hint_of "$OUT")" = "$want" ] && ok "installed on PATH: the hint names plain ddprun, with --set and --comm" "(\`$want\`)" \
    || bad "installed on PATH: the hint names plain ddprun, with --set and --comm" "— '$(hint_of "$OUT")', expected '$want'"
  PATH="$PWD/inst/bin:$PATH" follow "installed on PATH: that hint runs as printed" 0 "$OUT"
  expect_rc "negative control: export without the options is refused the same way" 2 inst/bin/ddptok export --config tiny.yaml --set paths.artifacts=empty2
  [ "$(hint_of "$OUT")" = "inst/bin/ddprun -np 2 train --config tiny.yaml --set paths.artifacts=empty2" ] \
    && ok "negative control: given no --backend/--comm/--comm-timeout, the hint has none" || bad "negative control: given no --backend/--comm/--comm-timeout, the hint has none" "— '$(hint_of "$OUT")'"
  expect_rc "negative control: the binary alone is refused the same way" 2 alone/ddptok export --config tiny.yaml --set paths.artifacts=empty3
  grep -q 'run `mpirun .*alone/ddptok train' <<<"$OUT" && ! grep -q ddprun <<<"$OUT" \
    && ok "negative control: with no ddprun beside the binary the hint is mpirun (not a launcher that is not there)" \
    || bad "negative control: with no ddprun beside the binary the hint is mpirun (not a launcher that is not there)" "— $OUT"
}
