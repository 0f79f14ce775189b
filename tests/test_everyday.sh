# everyday: a day of use in one working directory (issue 29), each case what broke there, with
# a negative control: verdicts of this config only (evaluate --protocol, plot), two configs in
# one directory kept apart, lineage and log hints that do not lead to a refusal, plot without
# reference or parity, `ddptok config`, train.world_size: auto, the shipped configs found by
# name, the exported model loaded in Python, the memory check per host, hints that run as
# printed.
cfg="$CONFIGS/tiny.yaml"
T=(--config "$cfg")
# This config's protocol in miniature: prepare, reference, parity, the three runs, check-empty
# and one matrix cell (W = 3, as run/protocol.sh makes its cells).
cell=(--set paths.outputs=outputs/matrix/W3 --set paths.artifacts=outputs/matrix/W3 --set train.world_size=3 --set train.rank_bands=auto)
fixture_protocol() {
  one prepare "${T[@]}" >/dev/null && one reference "${T[@]}" >/dev/null && ddp 2 parity "${T[@]}" >/dev/null &&
    ddp 2 train "${T[@]}" >/dev/null 2>&1 && ddp 2 train "${T[@]}" --continuous >/dev/null 2>&1 &&
    ddp 2 train "${T[@]}" --resume latest >/dev/null 2>&1 && ddp 2 check-empty "${T[@]}" >/dev/null 2>&1 &&
    one prepare "${T[@]}" "${cell[@]}" >/dev/null && one reference "${T[@]}" "${cell[@]}" >/dev/null &&
    ddp 3 parity "${T[@]}" "${cell[@]}" >/dev/null 2>&1
}
# b.yaml: another config (tiny.yaml with other data: its own file, its own seed).
other_config() { sed 's/^seed: 99/seed: 5/' "$cfg" > b.yaml; }
B=(--config b.yaml --set paths.outputs=ob --set paths.artifacts=ab)

# Verdicts of this config only. With another config's reports copied into its outputs (what a
# shared outputs/ held: minimum.yaml's parity.json, empty.json and matrix/ read for
# fortunes.yaml), evaluate --protocol printed "parity report: ok, empty-window report: ok,
# matrix 6/6" and OK. Now each report records its config and data lock, and one of another
# config or data is named and not counted. Negative control: the same reports, this config's,
# give OK (the check can pass); one without a record is not counted either.
case_verdict_of_this_config_only() {
  fixture protocol || return
  expect_rc "this config's protocol: evaluate --protocol OK" 0 one evaluate "${T[@]}" --protocol
  expect_grep "negative control: this config's reports and its matrix cell counted" 'negative-control matrix: 1/1 cells ok' "$OUT"
  # Another config of the same file (--set: its checkpoints, reports and lock differ)
  expect_rc "another config (--set train.optimizer.lr=0.05): evaluate --protocol is not OK" 1 one evaluate "${T[@]}" --set train.optimizer.lr=0.05 --protocol
  grep -q '^evaluate --protocol: OK' <<<"$OUT" && bad "another config: no OK line" || ok "another config: no OK line"
  expect_grep "another config: the parity report named, with the key that differs, and not counted" '^  parity report: not counted: outputs/parity.json is another config.s \(differs at train.optimizer.lr: 0.05 here vs 0.2 there\)' "$OUT"
  expect_grep "another config: the empty-window report named and not counted" '^  empty-window report: not counted: outputs/empty.json is another config.s' "$OUT"
  expect_grep "another config: the matrix cell named and not counted" '^  negative-control matrix: not counted: W3: another config.s' "$OUT"
  expect_grep "another config: the resumed model named as another config's, with the --fresh line" '^  resume: not counted: the resumed run.s step-12 model .* is another config.s .*: run `.* train .*--fresh`' "$OUT"
  # Another config, its own directories, the first config's reports copied in: the issue's case.
  other_config
  one prepare "${B[@]}" >/dev/null && ddp 2 train "${B[@]}" >/dev/null 2>&1 && ddp 2 train "${B[@]}" --continuous >/dev/null 2>&1 \
    && ddp 2 train "${B[@]}" --resume latest >/dev/null 2>&1 || { bad "another config's own run"; return; }
  cp outputs/parity.json outputs/empty.json ob/ && mkdir -p ob/matrix && cp -r outputs/matrix/W3 ob/matrix/
  expect_rc "another config with the first config's reports copied in: evaluate --protocol is not OK" 1 one evaluate "${B[@]}" --protocol
  expect_grep "copied reports: parity.json named as made on other data or another config" '^  parity report: not counted: ob/parity.json is another config.s \(differs at seed: 5 here vs 99 there\)' "$OUT"
  expect_grep "copied reports: the matrix cell not counted" '^  negative-control matrix: not counted: W3: another config.s' "$OUT"
  grep -q 'not_counted' ob/report.json && json ob/report.json 'j["parity"] is None and j["empty"] is None and j["matrix"] == {} and len(j["not_counted"]) == 3' | grep -q True \
    && ok "copied reports: report.json holds none of them, each under not_counted" || bad "copied reports: report.json holds none of them, each under not_counted" "— $(head -c 300 ob/report.json)"
  # A report without a record (an older ddptok's): not counted.
  /usr/bin/python3 -c "import json; j = json.load(open('outputs/parity.json')); j.pop('config'); json.dump(j, open('outputs/parity.json', 'w'))"
  expect_rc "a parity.json without its config recorded: not OK" 1 one evaluate "${T[@]}" --protocol
  expect_grep "a parity.json without its config recorded: said so" 'parity report: not counted: outputs/parity.json is records no config or data lock' "$OUT"
}

# Two configs in one directory: the second config's first write is refused (prepare or import
# replaced the first's corpus; train moved its logs and met its checkpoints), naming the
# first config and printing this command with its own directories, which runs; nothing of the
# first config changes. clean of the second removes nothing of the first. Negative control:
# the same file again, or a copy of it, is the same config (accepted).
case_two_configs_kept_apart() {
  fixture protocol || return
  other_config
  local sums; sums=$(sha256sum outputs/data/corpus.h5 outputs/train/*.jsonl artifacts/checkpoints/*/* | sha256sum)
  expect_rc "another config's prepare in this directory: refused" 2 one prepare --config b.yaml
  expect_grep "another config's prepare: names the config the directory is for, and the command with its own directories" \
    "^ddptok: error: outputs/ holds the results of another config, .*tiny.yaml \(outputs/.ddptok-config\): b.yaml's would mix with them .*: run \`.* prepare --config b.yaml --set paths.outputs=outputs-b --set paths.artifacts=artifacts-b\`" "$OUT"
  local hint; hint=$(sed -n 's/.*own directories: run `\([^`]*\)`.*/\1/p' <<<"$OUT")
  expect_rc "another config's train here: refused too (no log moved, no lineage met)" 2 ddp 2 train --config b.yaml
  expect_rc "another config's --check train here: refused as the run is" 2 one --check train --config b.yaml
  expect_rc "another config's clean here: refused (removes nothing of another config)" 2 one clean --scope generated --config b.yaml
  [ "$(sha256sum outputs/data/corpus.h5 outputs/train/*.jsonl artifacts/checkpoints/*/* | sha256sum)" = "$sums" ] \
    && ok "another config refused: the first config's corpus, logs and checkpoints byte for byte" || bad "another config refused: the first config's corpus, logs and checkpoints byte for byte"
  expect_rc "the printed command (its own directories) runs as printed" 0 bash -c "$hint"
  [ -f outputs-b/data/corpus.h5 ] && ok "the second config's corpus in its own outputs-b/" || bad "the second config's corpus in its own outputs-b/"
  cp "$cfg" copy.yaml
  expect_rc "negative control: a copy of the first config's file is the same config (accepted)" 0 one --check train --config copy.yaml
  expect_rc "negative control: the same file with another --set is the same config (accepted)" 0 one --check train "${T[@]}" --set train.optimizer.lr=0.05
}

# A lineage of another run: train of this config with other --set met the first run's
# checkpoints and was told "continue it: --resume latest", which then failed (config differs /
# data lock differs). Now the refusal names why it cannot be continued and offers --fresh,
# which runs. Negative control: the same config is still offered --resume latest.
case_lineage_of_another_run() {
  one prepare "${T[@]}" >/dev/null && ddp 2 train "${T[@]}" >/dev/null 2>&1 || { bad "lineage fixture"; return; }
  expect_rc "a lineage of the same config: refused, offering --resume latest" 2 ddp 2 train "${T[@]}"
  expect_grep "negative control: the same config is offered --resume latest" 'continue it: run `.* --resume latest`' "$OUT"
  expect_rc "a lineage of another config: refused" 2 ddp 2 train "${T[@]}" --set train.optimizer.lr=0.05
  expect_grep "a lineage of another config: names what differs and offers --fresh, not --resume" \
    '^ddptok: ranks 0-1: error: artifacts/checkpoints already holds 1 checkpoint\(s\) of another run: the newest, step-0006, is of another config: it differs at train.optimizer.lr: 0.2 vs 0.05 .*start over: run `[^`]* --set train.optimizer.lr=0.05 --fresh`' "$OUT"
  grep -q 'resume latest' <<<"$OUT" && bad "a lineage of another config: no --resume latest offered" || ok "a lineage of another config: no --resume latest offered"
  expect_rc "--resume latest of another config's lineage: refused with the --fresh line" 2 ddp 2 train "${T[@]}" --set train.optimizer.lr=0.05 --resume latest
  expect_grep "--resume latest of another config's lineage: the --fresh line" 'it cannot be continued here; start over: run `[^`]* --fresh`' "$OUT"
  local hint; hint=$(sed -n 's/.*start over: run `\([^`]*\)`.*/\1/p' <<<"$OUT" | head -1)
  expect_rc "the printed --fresh line runs as printed" 0 bash -c "$hint"
  # Other data: the corpus prepared again with another seed (the same file): "trained on other data".
  one prepare "${T[@]}" --set seed=5 >/dev/null
  expect_rc "a lineage trained on other data: refused" 2 ddp 2 train "${T[@]}" --set seed=5
  expect_grep "a lineage trained on other data: says so and offers --fresh" 'is trained on other data: its data lock [0-9a-f]+… is not this corpus.s .*start over: run `[^`]* --set seed=5 --fresh`' "$OUT"
  # The continuous lineage (its hint was refused the same way): --continuous --fresh.
  ddp 2 train "${T[@]}" --set seed=5 --continuous >/dev/null 2>&1
  expect_rc "a continuous lineage of another config: refused" 2 ddp 2 train "${T[@]}" --set seed=5 --set train.optimizer.lr=0.05 --continuous
  expect_grep "a continuous lineage of another config: offers --continuous --fresh" 'artifacts/continuous already holds 1 checkpoint\(s\) of another run: .*start over: run `[^`]* --continuous --fresh`' "$OUT"
}

# A log a run is writing is never moved aside: a second train with the same paths.outputs
# (its own paths.artifacts) moved the first one's live JSONL and rank logs away under it.
case_live_log_not_moved() {
  one prepare "${T[@]}" >/dev/null
  local long=("${T[@]}" --set train.updates=400000 --set train.interrupt_at=0) pid rc n1 n2
  mpirun -np 2 "$DDPTOK" train "${long[@]}" --set paths.artifacts=a1 > first.txt 2>&1 &
  pid=$!
  wait_lines outputs/train/interrupted.jsonl 20 30
  expect_rc "a second train with the same paths.outputs while the first writes its logs: refused" 2 ddp 2 train "${long[@]}" --set paths.artifacts=a2
  expect_grep "the second train: names the live log and the fix" 'outputs/train/interrupted.jsonl: a run is writing this log now .*give this run its own --set paths.outputs=DIR' "$OUT"
  n1=$(wc -l < outputs/train/interrupted.jsonl); sleep 0.3; n2=$(wc -l < outputs/train/interrupted.jsonl)
  [ "$n2" -gt "$n1" ] && [ -z "$(ls outputs/train | grep -v '^interrupted.jsonl$')" ] \
    && ok "the first run's JSONL stays in place and goes on growing" "($n1 -> $n2 lines)" || bad "the first run's JSONL stays in place and goes on growing" "— $n1 -> $n2, $(ls outputs/train | tr '\n' ' ')"
  kill -USR1 "$pid"; wait "$pid"; rc=$?
  [ $rc -eq 75 ] && ok "the first run stops on request as usual (exit 75)" || bad "the first run stops on request as usual (exit 75)" "— exit $rc"
  expect_rc "negative control: once that run has ended, the next train moves its log aside as always" 0 ddp 2 train "${T[@]}" --set paths.artifacts=a3
}

# plot: the loss curves (and the validation loss) of a run without reference or parity
# (plot refused: "needs reference.h5, grads.h5"); the parity panel only with this config's
# reports; labels that say what happened ("interrupted + resumed" was printed for a run that
# never was).
case_plot_without_parity() {
  command -v gnuplot >/dev/null || { skip "$CASE" "gnuplot is not installed"; return; }
  one prepare "${T[@]}" >/dev/null && ddp 2 train "${T[@]}" --set train.interrupt_at=0 --set train.eval_every=4 >/dev/null 2>&1 \
    && ddp 2 train "${T[@]}" --continuous >/dev/null 2>&1 || { bad "plot fixture"; return; }
  expect_rc "plot of a trained run, no reference or parity" 0 one plot "${T[@]}"
  [ -s outputs/figure.png ] && ! grep -q parity.dat outputs/plot/figure.gp && grep -q "layout 1,1" outputs/plot/figure.gp \
    && ok "plot without reference/parity: a figure of the loss panel alone" || bad "plot without reference/parity: a figure of the loss panel alone"
  grep -q "'val-interrupted.dat' using 1:2 with linespoints.*validation loss (3 points)" outputs/plot/figure.gp && [ "$(wc -l < outputs/plot/val-interrupted.dat)" -eq 3 ] \
    && ok "plot: the validation loss of the run (train.eval_every 4: steps 4, 8, 12)" || bad "plot: the validation loss of the run (train.eval_every 4: steps 4, 8, 12)" "— $(cat outputs/plot/val-interrupted.dat 2>/dev/null | tr '\n' ' ')"
  grep -q 'title "train (not interrupted), steps 1-12"' outputs/plot/figure.gp && grep -q 'train (not interrupted) vs train --continuous: identical' outputs/plot/figure.gp \
    && ! grep -q 'resumed vs' outputs/plot/figure.gp && ok "plot: a run never interrupted is labelled so, compared as train vs train --continuous" \
    || bad "plot: a run never interrupted is labelled so, compared as train vs train --continuous" "— $(grep -o 'title "[^"]*"' outputs/plot/figure.gp | head -3 | tr '\n' ' ')"
  expect_grep "plot: says there is no parity panel and what makes it" 'no parity panel: no reference.h5 \(run `.* reference --config' "$OUT"
  one reference "${T[@]}" >/dev/null && ddp 2 parity "${T[@]}" --set train.optimizer.lr=0.05 >/dev/null 2>&1
  expect_rc "plot with another config's parity report" 0 one plot "${T[@]}"
  ! grep -q parity.dat outputs/plot/figure.gp && grep -q 'no parity panel: outputs/parity.json is another config.s' <<<"$OUT" \
    && ok "plot: no parity panel from another config's parity.json, named" || bad "plot: no parity panel from another config's parity.json, named" "— $OUT"
  ddp 2 parity "${T[@]}" >/dev/null 2>&1
  expect_rc "negative control: plot with this config's parity report" 0 one plot "${T[@]}"
  grep -q "plot 'parity.dat'" outputs/plot/figure.gp && ok "negative control: this config's parity report draws the parity panel" || bad "negative control: this config's parity report draws the parity panel"
  # Under the C locale gnuplot warned "iconv failed to convert degree sign" on every plot.
  OUT=$(env -u LC_ALL -u LC_CTYPE LANG=C "$DDPTOK" plot "${T[@]}" 2>&1)
  ! grep -qi iconv <<<"$OUT" && ok "plot under LANG=C: no iconv warning from gnuplot" || bad "plot under LANG=C: no iconv warning from gnuplot" "— $(grep -i iconv <<<"$OUT")"
  (cd outputs/plot && env -u LC_ALL -u LC_CTYPE LANG=C gnuplot figure.gp 2>&1) | grep -qi iconv \
    && ok "negative control: gnuplot itself under LANG=C on that script warns (the check can fail)" || skip "negative control: gnuplot under LANG=C warns" "this gnuplot does not warn under the C locale"
}

# `ddptok config`: every key, its value and where it comes from; the output is a config
# that reads back to the same values (negative control: a changed line shows up).
case_config_command() {
  expect_rc "ddptok config --config tiny.yaml --set train.optimizer.lr=0.05" 0 one config "${T[@]}" --set train.optimizer.lr=0.05
  printf '%s\n' "$OUT" > resolved.yaml
  local n; n=$(grep -c '^[a-z]' resolved.yaml)
  [ "$n" -eq "$(one config "${T[@]}" | grep -c '^[a-z]')" ] && [ "$n" -ge 45 ] && ok "config: one line per key" "($n keys)" || bad "config: one line per key" "— $n"
  expect_grep "config: a file's key with its file and line" '^seed: 99 +# .*tiny.yaml:2$' "$OUT"
  expect_grep "config: a --set key with its --set" '^train.optimizer.lr: 0.05 +# --set train.optimizer.lr=0.05$' "$OUT"
  expect_grep "config: a default, and what auto resolves to" '^train.checkpoint_every: auto +# default; auto: every 50 updates' "$OUT"
  expect_grep "config: train.world_size as the file gives it" "^train.world_size: 2 +# .*tiny.yaml:$(grep -n 'world_size:' "$cfg" | cut -d: -f1)\$" "$OUT"
  one config --config resolved.yaml > again.yaml
  diff <(grep '^[a-z]' resolved.yaml | sed 's/ *#.*//') <(grep '^[a-z]' again.yaml | sed 's/ *#.*//') >/dev/null \
    && ok "config: its output, as a config, reads back to the same values" || bad "config: its output, as a config, reads back to the same values" "— $(diff <(grep '^[a-z]' resolved.yaml | sed 's/ *#.*//') <(grep '^[a-z]' again.yaml | sed 's/ *#.*//') | head -3)"
  sed -i 's/^train.updates: 12 /train.updates: 13 /' resolved.yaml
  one config --config resolved.yaml | grep -q '^train.updates: 13 ' && ok "negative control: a line changed in the output file shows in what it reads" \
    || bad "negative control: a line changed in the output file shows in what it reads"
}

# train.world_size: auto, the default: the ranks launched (no W given twice, -np and the
# config); one process takes the bands' count, or 1 under the global sampler; the bands
# sampler with auto bands in one process is refused with the fix, which runs.
case_world_size_auto() {
  printf 'seed: 3\ndata: {vocab_size: 24, splits: {train: 96, validation: 8, test: 32}, min_length: 8, max_length: 24}\nmodel: {context: 3, embed_dim: 8, hidden: 16}\ntrain: {sampler: global, global_batch: 6, rank_bands: auto, updates: 4, interrupt_at: 0}\n' > g.yaml
  expect_rc "no world_size, the global sampler: prepare in one process" 0 one prepare --config g.yaml
  local np
  for np in 1 2 3; do
    expect_rc "no world_size, the global sampler: train on $np rank(s) with no W given but -np" 0 ddp $np train --config g.yaml --set paths.artifacts=w$np
    expect_grep "train on $np rank(s): W = $np" "W = $np, steps 1\.\.4" "$OUT"
  done
  printf 'seed: 3\ndata: {vocab_size: 24, splits: {train: 96, validation: 8, test: 32}, min_length: 8, max_length: 24}\nmodel: {context: 3, embed_dim: 8, hidden: 16}\ntrain: {rank_bands: auto, updates: 4, interrupt_at: 0}\n' > a.yaml
  local A=(--config a.yaml --set paths.outputs=oa --set paths.artifacts=aa)  # another config: its own directories
  expect_rc "bands sampler, auto bands, no world_size: one process refused" 2 one prepare "${A[@]}"
  expect_grep "bands sampler, auto bands: the fix named" 'train.world_size: auto .* give it \(--set train.world_size=N, the -np you launch\), or use train.sampler: global' "$OUT"
  expect_rc "the fix: --set train.world_size=2, prepare then train on 2 ranks" 0 bash -c "'$DDPTOK' prepare ${A[*]} --set train.world_size=2 >/dev/null && timeout 60 mpirun -np 2 '$DDPTOK' train ${A[*]} --set train.world_size=2"
  expect_rc "negative control: a world_size that is not -np is refused" 2 ddp 3 train "${A[@]}" --set train.world_size=2 --set paths.artifacts=x
}

# The configs shipped with ddptok by name, from any directory: the binary of a checkout and,
# after make install, the installed one (which did not find configs/minimum.yaml, and said
# nothing of PREFIX/share/ddptok/configs).
case_shipped_configs() {
  mkdir -p elsewhere
  local name
  for name in minimum.yaml minimum configs/minimum.yaml; do
    OUT=$(cd elsewhere && "$DDPTOK" --check train --config "$name" 2>&1) \
      && ok "from another directory, --config $name is the checkout's" || bad "from another directory, --config $name is the checkout's" "— $OUT"
  done
  OUT=$(cd elsewhere && "$DDPTOK" --check train --config nosuch.yaml 2>&1)
  grep -q "nosuch.yaml: cannot read config file: No such file or directory (the configs shipped with ddptok are in $ROOT/configs" <<<"$OUT" \
    && ok "a config that is nowhere: the error names where the shipped ones are" || bad "a config that is nowhere: the error names where the shipped ones are" "— $OUT"
  make -s -C "$ROOT" install DESTDIR="$PWD/inst" >/dev/null 2>&1 || { bad "make install DESTDIR"; return; }
  for name in minimum.yaml configs/fortunes.yaml; do
    OUT=$(cd elsewhere && "$PWD/../inst/usr/local/bin/ddptok" --check train --config "$name" 2>&1) \
      && grep -q "ok" <<<"$OUT" && ok "installed: --config $name is PREFIX/share/ddptok/configs'" || bad "installed: --config $name is PREFIX/share/ddptok/configs'" "— $OUT"
  done
  OUT=$(cd elsewhere && "$PWD/../inst/usr/local/bin/ddptok" --help 2>&1)
  expect_grep "installed: --help names the shipped configs' folder" "configs shipped with ddptok: .*inst/usr/local/share/ddptok/configs" "$OUT"
  echo 'seed: 1' > elsewhere/minimum.yaml
  OUT=$(cd elsewhere && "$DDPTOK" config --config minimum.yaml 2>&1)
  grep -q '^seed: 1 .*minimum.yaml:1$' <<<"$OUT" && ok "negative control: a file of that name here is the one read" || bad "negative control: a file of that name here is the one read" "— $(grep '^seed' <<<"$OUT")"
}

# --help listed 4 of the 7 shipped configs (a list written by hand): now it is read from the
# folder, so it is `ls configs/*.yaml`. Negative controls: the same comparison rejects that list
# with one name dropped, and a binary beside another configs/ lists that folder's names.
case_help_lists_every_config() {
  local want got
  want=$(cd "$ROOT/configs" && ls *.yaml | sort | paste -sd, | sed 's/,/, /g')
  got=$("$DDPTOK" --help 2>&1 | sed -n 's/^configs shipped with ddptok: [^ ]* (\(.*\); --config NAME .*/\1/p')
  [ -n "$want" ] && [ "$got" = "$want" ] && ok "--help lists every shipped config (ls configs/*.yaml)" || bad "--help lists every shipped config (ls configs/*.yaml)" "— --help: $got; ls: $want"
  [ "$got" != "$(sed 's/, [^,]*$//' <<<"$want")" ] && ok "negative control: a list with one config dropped differs" || bad "negative control: a list with one config dropped differs"
  OUT=$("$DDPTOK" --check train --config nosuch.yaml 2>&1)
  expect_grep "a config that is nowhere: the error lists every shipped config" "the configs shipped with ddptok are in .*: --config NAME finds $want\\)" "$OUT"
  mkdir -p other/configs && cp "$DDPTOK" other/ && cp "$ROOT/configs/tiny.yaml" other/configs/zz-extra.yaml
  OUT=$(other/ddptok --help 2>&1)
  expect_grep "negative control: another binary's configs/ is what its --help lists" "configs shipped with ddptok: .*other/configs \\(zz-extra.yaml; --config NAME" "$OUT"
}

# configs/tiny-gpt.yaml beside configs/gpt-tiny.yaml: two names a reader cannot tell apart
# (the test suite's fast GPT, the tutorial's GPT); the first is now gpt-tests.yaml. No two
# shipped configs are named with the same words in another order. Negative control: that pair
# is what the same check rejects.
everyday_same_words() {  # the names (one a line) whose words, sorted, another name has too
  sed 's/\.yaml$//' | while read -r n; do printf '%s %s\n' "$(tr -- '-_' '\n\n' <<<"$n" | sort | paste -sd-)" "$n"; done |
    sort | awk '{ if ($1 == k) print p " " $2; k = $1; p = $2 }'
}
case_config_names_distinct() {
  local same
  same=$(ls "$ROOT/configs" | grep '\.yaml$' | everyday_same_words)
  [ -z "$same" ] && ok "no two shipped configs are named with the same words" || bad "no two shipped configs are named with the same words" "— $same"
  same=$(printf 'gpt-tiny.yaml\ntiny.yaml\ntiny-gpt.yaml\n' | everyday_same_words)
  [ "$same" = "gpt-tiny tiny-gpt" ] && ok "negative control: gpt-tiny.yaml beside tiny-gpt.yaml is caught" || bad "negative control: gpt-tiny.yaml beside tiny-gpt.yaml is caught" "— $same"
}

# train.world_size: auto under the global sampler: import's hint was `ddprun -np 1 train`, as if W
# had to be 1 (one process resolves auto to 1). Now it is `-np W` and says what W is. Negative
# control: a world_size given (2) is the hint's -np, with no such note.
case_import_hint_world_auto() {
  /usr/bin/python3 -c "
import random
random.seed(1)
print(chr(10).join(''.join(random.choice('abcdefgh ') for _ in range(60)) + chr(10) + '%' for _ in range(300)))" > text.txt
  local F=(--config "$CONFIGS/fortunes.yaml" --format bytes --delimiter '\n%\n' --input text.txt)
  OUT=$("$DDPTOK" import "${F[@]}" --set train.world_size=auto 2>&1)
  expect_grep "world_size: auto: import's hint is -np W and says what W is" 'to train on it, run `[^`]* -np W train [^`]*train\.world_size=auto` \(train\.world_size: auto: W is the ranks you launch' "$OUT"
  grep -q -- '-np 1 train' <<<"$OUT" && bad "world_size: auto: no -np 1 hint" "— $OUT" || ok "world_size: auto: no -np 1 hint"
  OUT=$("$DDPTOK" import "${F[@]}" --set train.world_size=2 --set paths.outputs=o2 --set paths.artifacts=a2 2>&1)
  expect_grep "negative control: world_size 2: the hint's -np 2, no auto note" 'to train on it, run `[^`]* -np 2 train [^`]*`$' "$OUT"
}

# The exported model in Python: docs/file-formats.md's snippet, run as it stands there, reads
# every tensor with its shape and values as tests/export_check.py's reader does. Negative
# controls: one element changed is seen; a truncated file is an error.
case_python_loads_export() {
  one prepare "${T[@]}" >/dev/null && ddp 2 train "${T[@]}" --continuous >/dev/null 2>&1 && one export "${T[@]}" --checkpoint artifacts/continuous/step-0012 >/dev/null \
    || { bad "export fixture"; return; }
  awk '/<!-- load-exported-model -->/ {on = 1; next} on && /^```python/ {inside = 1; next} inside && /^```/ {exit} inside {print}' "$ROOT/docs/file-formats.md" > load.py
  [ -s load.py ] || { bad "the snippet is in docs/file-formats.md"; return; }
  OUT=$(/usr/bin/python3 load.py outputs/model.safetensors 2>&1); local rc=$?
  local want; want=$(TESTS_DIR="$TESTS_DIR" /usr/bin/python3 -c "
import os, sys; sys.path.insert(0, os.environ['TESTS_DIR'])
import numpy as np, export_check
t = export_check.read_safetensors('outputs/model.safetensors')
t = t[0] if isinstance(t, tuple) else t
for name, a in t.items(): print(name, 'x'.join(map(str, a.shape)), f'{float(a.astype(np.float64).sum()):.9g}')")
  [ $rc -eq 0 ] && [ "$(grep -v '^step ' <<<"$OUT")" = "$want" ] && grep -q '^step 12, 1000 parameters' <<<"$OUT" \
    && ok "the docs' Python snippet loads the exported model: every tensor, shape and sum as export_check.py reads them" \
    || bad "the docs' Python snippet loads the exported model: every tensor, shape and sum as export_check.py reads them" "— exit $rc: $OUT | want: $want"
  /usr/bin/python3 -c "
import struct; d = bytearray(open('outputs/model.safetensors','rb').read()); n = struct.unpack('<Q', d[:8])[0]
d[8 + n + 4 * 20] ^= 0x40; open('changed.safetensors','wb').write(d)"
  [ "$(/usr/bin/python3 load.py changed.safetensors 2>&1 | grep -v '^step ')" != "$want" ] && ok "negative control: one element changed, the snippet's sums differ" \
    || bad "negative control: one element changed, the snippet's sums differ"
  head -c 100 outputs/model.safetensors > cut.safetensors
  /usr/bin/python3 load.py cut.safetensors >/dev/null 2>&1 && bad "negative control: a truncated file is an error in the snippet" || ok "negative control: a truncated file is an error in the snippet"
}

# The memory check counts the ranks that share a host: two ranks of N bytes each need 2N
# (they passed under a host limit of 1.5N, as one rank's N did).
case_memory_per_host() {
  local need limit
  need=$(DDPTOK_MEMORY_LIMIT=1K "$DDPTOK" --check train "${T[@]}" --set train.world_size=1 --set train.rank_bands=auto 2>&1 | sed -n 's/.*the workload needs \([0-9.]* [KMG]iB\).*/\1/p')
  [ -n "$need" ] || { bad "memory per host: the one rank's figure"; return; }
  limit=$(awk -v n="${need% *}" -v u="${need#* }" 'BEGIN { m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : 1073741824; printf "%d", n * 1.5 * m }')
  expect_rc "one rank within a host limit of 1.5 x its need" 0 env DDPTOK_MEMORY_LIMIT=$limit timeout 60 "$DDPTOK" check-env "${T[@]}" --set train.world_size=1 --set train.rank_bands=auto
  expect_rc "two ranks on this host under the same limit: refused" 2 env DDPTOK_MEMORY_LIMIT=$limit timeout 60 mpirun -np 2 "$DDPTOK" check-env "${T[@]}"
  expect_grep "two ranks on this host: the figure is per rank x 2 ranks on this host" "the workload needs [0-9.]+ [KMG]iB \([0-9.]+ [KMG]iB per rank x 2 ranks on this host, .*\).*start fewer ranks per host" "$OUT"
}

# Hints and help that run as printed.
case_hints_run_as_printed() {
  one prepare "${T[@]}" >/dev/null
  expect_rc "run/ddprun -np 2 ./ddptok COMMAND (the mpirun habit) runs that binary" 0 "$ROOT/run/ddprun" -np 2 "$DDPTOK" check-env "${T[@]}"
  expect_rc "ddptok ./ddptok train: refused" 2 one "$DDPTOK" train "${T[@]}"
  expect_grep "ddptok ./ddptok train: explained, the launcher named" "unknown command '.*ddptok': the binary is named once, then the command: \`.*ddptok train \.\.\.\`, or for W ranks \`.*run/ddprun -np W train \.\.\.\`" "$OUT"
  OUT=$(one import --help)
  grep -q -- '--format bytes|llmc|nanogpt|megatron|jsonl|jsonl-text  .*(required)$' <<<"$OUT" && grep -q -- '--input PATH .*(required)$' <<<"$OUT" \
    && grep -q 'import --config FILE \[--set KEY=VALUE\]... --format ' <<<"$OUT" \
    && ok "import --help marks --format and --input required" || bad "import --help marks --format and --input required" "— $OUT"
  OUT=$(one train --help)
  grep -q "^usage: $ROOT/run/ddprun -np W train --config FILE" <<<"$OUT" && grep -q "\`$DDPTOK clean --config FILE --scope generated\` removes" <<<"$OUT" \
    && ok "train --help: the usage is the run/ddprun line, the clean line runs (was: mpirun -np W ddptok, \`ddptok clean\`)" \
    || bad "train --help: the usage is the run/ddprun line, the clean line runs (was: mpirun -np W ddptok, \`ddptok clean\`)" "— $(grep -E '^usage|removes' <<<"$OUT")"
  expect_rc "train --continuous" 0 ddp 2 train "${T[@]}" --continuous
  local hint; hint=$(sed -n "s/^train: to evaluate the continuous run's step-12 model, run \`\([^\`]*\)\`$/\1/p" <<<"$OUT")
  [ -n "$hint" ] && ok "train --continuous ends with the evaluate line of its model" || bad "train --continuous ends with the evaluate line of its model" "— $(tail -2 <<<"$OUT")"
  expect_rc "that evaluate line runs as printed" 0 bash -c "$hint"
  expect_grep "that evaluate line scores the continuous run's model" '^evaluate: step-12 model of artifacts/continuous/step-0012' "$OUT"
}

# run/protocol.sh --force lists each path it removes (a trained and an exported model among
# them: removed without a word) and removes nothing of another config.
case_protocol_force_lists() {
  one prepare "${T[@]}" >/dev/null && ddp 2 train "${T[@]}" --continuous >/dev/null 2>&1 && one export "${T[@]}" --checkpoint artifacts/continuous/step-0012 >/dev/null \
    || { bad "protocol --force fixture"; return; }
  echo mine > outputs/notes.txt
  OUT=$(timeout 300 bash "$ROOT/run/protocol.sh" --force "$cfg" 2>&1)  # tiny.yaml's matrix ends it early: the listing is what counts
  grep -q '^protocol.sh --force: removing the [0-9]* path(s) an earlier run of ddptok made here:$' <<<"$OUT" && grep -q '^  outputs/model.safetensors$' <<<"$OUT" \
    && grep -q '^  artifacts/continuous/$' <<<"$OUT" && [ -f outputs/notes.txt ] \
    && ok "protocol.sh --force: each removed path listed first (the exported model, the checkpoints), the user's file kept" \
    || bad "protocol.sh --force: each removed path listed first (the exported model, the checkpoints), the user's file kept" "— $(head -12 <<<"$OUT")"
  mkdir -p theirs && (cd theirs && "$DDPTOK" prepare --config "$CONFIGS/minimum.yaml" >/dev/null)
  local sums; sums=$(sha256sum theirs/outputs/data/*)
  OUT=$(cd theirs && timeout 60 bash "$ROOT/run/protocol.sh" --force "$cfg" 2>&1); local rc=$?
  [ $rc -eq 2 ] && grep -q 'holds the results of another config' <<<"$OUT" && [ "$(sha256sum theirs/outputs/data/*)" = "$sums" ] \
    && ok "protocol.sh --force in another config's directory: stops (exit 2), removes nothing" || bad "protocol.sh --force in another config's directory: stops (exit 2), removes nothing" "— exit $rc: $(tail -2 <<<"$OUT")"
}

# The newcomer's day, by pasting only what ddptok prints: the protocol's config has results in
# this directory; their own text with the shipped fortunes.yaml: import (refused here, with the
# command that gives it its own directories), then each printed next command as printed —
# train, evaluate, plot — to a figure of their text's loss curves.
case_own_text_by_pasting() {
  command -v gnuplot >/dev/null || { skip "$CASE" "gnuplot is not installed"; return; }
  local text=/usr/share/common-licenses/GPL-3
  [ -f "$text" ] || { skip "$CASE" "$text is not there (base-files)"; return; }
  one prepare --config "$CONFIGS/minimum.yaml" >/dev/null || { bad "the protocol's prepare"; return; }
  next() { sed -n "s/^$1: .*run \`\\([^\`]*\\)\`\$/\\1/p" <<<"$OUT" | tail -1; }
  expect_rc "own text: import with the shipped config, in the protocol's directory: refused" 2 one import --config "$CONFIGS/fortunes.yaml" --format bytes --delimiter '\n\n' --input "$text"
  local cmd; cmd=$(sed -n 's/.*own directories: run `\([^`]*\)`.*/\1/p' <<<"$OUT")
  local step
  for step in import train evaluate plot; do
    [ -n "$cmd" ] || { bad "own text: the command printed before $step"; return; }
    OUT=$(timeout 300 bash -c "$cmd" 2>&1) && ok "own text: $step, pasted as printed" "($cmd)" || { bad "own text: $step, pasted as printed" "— $cmd: $(tail -3 <<<"$OUT")"; return; }
    case $step in import) cmd=$(next import) ;; train) cmd=$(next train) ;; evaluate) cmd=$(next evaluate) ;; esac
  done
  [ -s outputs-fortunes/figure.png ] && grep -q "validation loss" outputs-fortunes/plot/figure.gp \
    && ok "own text: a figure of its training and validation loss, in its own outputs-fortunes/" || bad "own text: a figure of its training and validation loss, in its own outputs-fortunes/"
  [ -f outputs/data/corpus.h5 ] && [ ! -e outputs/figure.png ] && ok "own text: the protocol's outputs/ untouched beside it" || bad "own text: the protocol's outputs/ untouched beside it"
}

# Issue 38.2: a second config in a directory gets the way out from every command, the
# protocol script included: its own directories (the two --set), printed; the protocol run
# as printed passes beside the first config's results, which stay as they were; the README's
# GPT block runs as written in a checkout where the MLP's protocol ran.
case_second_config_way_out() {
  local gpt="$CONFIGS/gpt-tiny.yaml" rc cmd sums
  # The checkout as the README's commands see it: ./ddptok, run/, configs/.
  ln -s "$ROOT/ddptok" ddptok && ln -s "$ROOT/run" run && ln -s "$ROOT/configs" configs
  one prepare --config "$CONFIGS/minimum.yaml" >/dev/null || { bad "the MLP's prepare"; return; }
  sums=$(sha256sum outputs/data/*)
  expect_rc "another config's results here: clean refuses (exit 2)" 2 one clean --scope generated --dry-run --config "$gpt"
  expect_grep "clean names this config's own directories" 'own directories instead, add `--set paths\.outputs=outputs-gpt-tiny --set paths\.artifacts=artifacts-gpt-tiny`' "$OUT"
  expect_rc "another config's results here: export refuses (exit 2)" 2 one export --config "$gpt" --format hf
  expect_grep "export with its own directories still empty: the way out starts at prepare" 'starting with its corpus: run `[^`]*ddptok prepare --config [^ ]*gpt-tiny\.yaml --set paths\.outputs=outputs-gpt-tiny --set paths\.artifacts=artifacts-gpt-tiny`' "$OUT"
  expect_rc "another config's results here: protocol.sh stops (exit 2)" 2 timeout 120 bash run/protocol.sh configs/gpt-tiny.yaml
  cmd=$(sed -n 's/^protocol.sh: give .* its own directories here: \(bash .*--set paths\.artifacts=artifacts-gpt-tiny\) (and add .*/\1/p' <<<"$OUT")
  [ -n "$cmd" ] && ok "protocol.sh prints its own command with this config's own directories" "($cmd)" \
    || { bad "protocol.sh prints its own command with this config's own directories" "— $(tail -2 <<<"$OUT")"; return; }
  OUT=$(timeout 600 bash -c "$cmd" 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q '^protocol: OK$' <<<"$OUT" && grep -qE '^  resume \(step 100\) +max \|dtheta\| = 0 +ok' <<<"$OUT" \
    && ok "protocol.sh as printed: every proof of the GPT holds in its own directories" || { bad "protocol.sh as printed: every proof of the GPT holds in its own directories" "— exit $rc: $(tail -3 <<<"$OUT")"; return; }
  [ -f outputs-gpt-tiny/report.json ] && [ -d outputs-gpt-tiny/matrix/W3-A2 ] && [ ! -e outputs/report.json ] && [ "$(sha256sum outputs/data/*)" = "$sums" ] \
    && ok "the GPT's report and matrix in its own outputs-gpt-tiny/, the MLP's corpus untouched" || bad "the GPT's report and matrix in its own outputs-gpt-tiny/, the MLP's corpus untouched"
  # The README's GPT block, as written, from the start (its own directories removed first: its
  # protocol line would refuse the earlier run's results without --force).
  local block; block=$(awk '/^## A GPT/{g=1} g && /^```sh$/{b=1; next} b && /^```$/{exit} b' "$ROOT/README.md")
  grep -q 'run/protocol.sh configs/gpt-tiny.yaml \$G' <<<"$block" || { bad "the README's GPT block found" "— $block"; return; }
  rm -rf outputs-gpt-tiny artifacts-gpt-tiny
  OUT=$(timeout 900 bash -euc "$block" 2>&1); rc=$?
  [ $rc -eq 0 ] && [ -f outputs-gpt-tiny/hf/config.json ] && [ -f outputs-gpt-tiny/hf/model.safetensors ] && [ -f outputs-gpt-tiny/generate.json ] \
    && grep -q '^train (interrupted): done at step 50' <<<"$OUT" \
    && ok "the README's GPT block runs as written where the MLP's protocol ran" "($(wc -l <<<"$block") lines)" \
    || bad "the README's GPT block runs as written where the MLP's protocol ran" "— exit $rc: $(tail -4 <<<"$OUT")"
  expect_grep "generate names the outputs directory it wrote" '; the ids: outputs-gpt-tiny/generate\.json$' "$OUT"
}

# Issue 38.3: configs/fortunes-gpt.yaml trains any text imported so (the global sampler, as
# fortunes.yaml): a folder of a few whole files trains; the control, the same import under the
# bands sampler, is refused, and a refused import publishes nothing.
case_fortunes_gpt_any_text() {
  local g="$CONFIGS/fortunes-gpt.yaml" f
  mkdir -p txt
  for f in GPL-3 Apache-2.0 BSD; do [ -f "/usr/share/common-licenses/$f" ] || { skip "$CASE" "/usr/share/common-licenses/$f is not there (base-files)"; return; }; cp "/usr/share/common-licenses/$f" txt/; done
  expect_rc "fortunes-gpt.yaml: a folder of three whole files imports" 0 one import --config "$g" --format bytes --input txt
  # (its cosine warms up for 1000 updates: a run of 4 needs a shorter warmup, which the error would name)
  expect_rc "fortunes-gpt.yaml: and trains (W = 2, 4 updates)" 0 ddp 2 train --config "$g" --set train.updates=4 --set train.eval_every=0 \
    --set train.warmup_updates=1
  expect_rc "the control: the same import under the bands sampler is refused" 2 one import --config "$g" --set train.sampler=bands \
    --set paths.outputs=bands --set paths.artifacts=bands-a --format bytes --input txt
  expect_grep "the refusal says what the sampler needs and that nothing was published" \
    'holds no train sequence: --set train.sampler=global.*nothing published \(bands/data/corpus\.h5 removed again\)' "$(tr '\n' ' ' <<<"$OUT")"
  [ ! -e bands/data/corpus.h5 ] && [ ! -e bands/data/plan.h5 ] && ok "a refused import leaves no corpus.h5 nor plan.h5" \
    || bad "a refused import leaves no corpus.h5 nor plan.h5" "— $(ls bands/data 2>&1)"
}

# Issue 38.4: shards without a test split (llm.c's: train and val): train's closing hint is
# `evaluate --split validation`, which runs as printed; a plain evaluate, refused there, names
# that first. The control: a corpus with a test split keeps the plain `evaluate`.
case_no_test_split_hint() {
  local f="$CONFIGS/fortunes.yaml" i cmd
  [ -f /usr/share/common-licenses/GPL-3 ] || { skip "$CASE" "/usr/share/common-licenses/GPL-3 is not there (base-files)"; return; }
  mkdir -p shards && sed -n '1,400p' /usr/share/common-licenses/GPL-3 > shards/text_train.txt && sed -n '401,600p' /usr/share/common-licenses/GPL-3 > shards/text_val.txt
  local s=(--config "$f" --set train.updates=4)
  expect_rc "train and val shards import with --split-from-names" 0 one import "${s[@]}" --format bytes --delimiter '\n\n' --input shards --split-from-names
  expect_rc "and train (4 updates)" 0 ddp 2 train "${s[@]}"
  cmd=$(sed -n 's/^train: to evaluate the step-4 model, run `\(.*\)`$/\1/p' <<<"$OUT")
  expect_grep "no test split: train's closing hint is evaluate --split validation" 'evaluate .*--split validation' "$cmd"
  OUT=$(timeout 120 bash -c "$cmd" 2>&1) && ok "the hint runs as printed" "($cmd)" || bad "the hint runs as printed" "— $cmd: $(tail -2 <<<"$OUT")"
  expect_rc "a plain evaluate there is refused" 2 one evaluate "${s[@]}"
  expect_grep "its refusal names the split the data has first" 'no test loss to report; score the validation split: run `[^`]*evaluate [^`]*--split validation`; or import again .*--split-from-names: an input named test' "$OUT"
  rm -rf outputs artifacts
  for i in $(seq 1 60); do printf 'document %d of a corpus that has all three splits, with enough text to learn from\n\n' "$i"; done > all.txt
  one import "${s[@]}" --format bytes --delimiter '\n\n' --input all.txt >/dev/null && ddp 2 train "${s[@]}" >/dev/null 2>&1; OUT=$(ddp 2 train "${s[@]}" --fresh 2>&1)
  expect_grep "the control: with a test split, the hint is the plain evaluate" '^train: to evaluate the step-4 model, run `[^`]*evaluate --config [^ ]*fortunes\.yaml --set train\.updates=4`$' "$OUT"
}

# Issue 38.6d: train.world_size: auto under the bands sampler with rank_bands: auto, where W
# decides the data: a one-process command (plot, evaluate, config) refused it although the run's
# W is in its logs. Now it takes the W of this config's run from its JSONL (the first record's
# rank_tokens, its config_digest this config's at that W) and says so. Negative controls: no log
# is refused in one line naming the key and the remedy, which runs; another config's log is not
# taken; a run on 3 ranks gives W = 3 (read, not assumed); prepare (which makes the data for W)
# is still refused, and train's hint to prepare, which was that refused plain prepare, gives W.
case_world_auto_from_run_logs() {
  printf 'seed: 3\ndata: {vocab_size: 24, splits: {train: 96, validation: 8, test: 32}, min_length: 8, max_length: 24}\nmodel: {context: 3, embed_dim: 8, hidden: 16}\ntrain: {rank_bands: auto, updates: 4, interrupt_at: 0, eval_every: 2}\n' > wa.yaml
  expect_rc "no log yet: plot refused" 2 one plot --config wa.yaml
  expect_grep "no log: one line naming the key and the remedy" '^ddptok: error: wa.yaml: train.world_size: auto with train.rank_bands: auto and the bands sampler: plot takes W from this config.s run, and no log of one \(outputs/train/\*\.jsonl\) says it: give it: --set train.world_size=N' "$OUT"
  [ "$(wc -l <<<"$OUT")" -eq 1 ] && ok "no log: the refusal is one line" || bad "no log: the refusal is one line" "— $OUT"
  expect_rc "prepare (makes the data W decides) is still refused without W" 2 one prepare --config wa.yaml
  expect_rc "train on 2 ranks before prepare: refused" 2 ddp 2 train --config wa.yaml
  local hint; hint=$(sed -n 's/.*cannot open: No such file or directory: run `\([^`]*\)` first$/\1/p' <<<"$OUT" | head -1)
  expect_grep "its prepare hint gives the W of the ranks launched (a plain prepare is refused)" 'prepare --config wa\.yaml --set train\.world_size=2$' "$hint"
  OUT=$(timeout 120 bash -c "$hint" 2>&1) && ok "that prepare hint runs as printed" || { bad "that prepare hint runs as printed" "— $hint: $OUT"; return; }
  ddp 2 train --config wa.yaml >/dev/null 2>&1 || { bad "a run on 2 ranks of world_size: auto"; return; }
  if command -v gnuplot >/dev/null; then
    expect_rc "plot --config wa.yaml after the run on 2 ranks" 0 one plot --config wa.yaml
    expect_grep "plot: W taken from the run's log, said so" "^plot: train.world_size: auto: W = 2, the run's \(outputs/train/interrupted.jsonl\)" "$OUT"
  fi
  expect_rc "evaluate --config wa.yaml in one process after the run" 0 one evaluate --config wa.yaml
  expect_grep "evaluate: W = 2 from the log, the step-4 model of the run scored" "^evaluate: train.world_size: auto: W = 2, the run's" "$OUT"
  expect_grep "evaluate: the run's step-4 model" '^evaluate: step-4 model of artifacts/checkpoints/step-0004' "$OUT"
  expect_rc "negative control: the remedy runs as said (--set train.world_size=2, no log read)" 0 one evaluate --config wa.yaml --set train.world_size=2
  grep -q "the run's" <<<"$OUT" && bad "negative control: W given: no log read" "— $OUT" || ok "negative control: W given: no log read"
  expect_rc "negative control: another config (--set train.optimizer.lr=0.05): its log is not this config's: refused" 2 one config --config wa.yaml --set train.optimizer.lr=0.05
  expect_grep "another config: the no-log refusal" 'config takes W from this config.s run, and no log of one' "$OUT"
  rm -rf outputs artifacts
  one prepare --config wa.yaml --set train.world_size=3 >/dev/null && ddp 3 train --config wa.yaml >/dev/null 2>&1 || { bad "a run on 3 ranks of world_size: auto"; return; }
  OUT=$(one config --config wa.yaml 2>&1)
  expect_grep "negative control: a run on 3 ranks: W = 3 from its log" "^config: train.world_size: auto: W = 3, the run's" "$OUT"
  expect_grep "config: the value's comment says where W came from" "^train.world_size: auto .*in one process: 3, the run's, from its logs" "$OUT"
}

# Issue 38.6f: train's lines called the main lineage's first run "train (interrupted)" whatever
# happened (the name of its log, interrupted.jsonl), so a run that reached step U (interrupt_at
# 0) was "interrupted" there and "not interrupted" in plot. Now they say what happened, as plot
# does. Negative controls: a run interrupted as configured, and one stopped by a request before
# U, are still "interrupted" in both; the resumed run is "resumed".
case_progress_label_as_plot() {
  one prepare "${T[@]}" >/dev/null || { bad "progress label fixture"; return; }
  expect_rc "train with interrupt_at 0 runs to step 12" 0 ddp 2 train "${T[@]}" --set train.interrupt_at=0
  expect_grep "run to its end: done line says not interrupted" '^train \(not interrupted\): done at step 12$' "$OUT"
  expect_grep "run to its end: summary says not interrupted" '^train \(not interrupted\): summary: 12 steps \(1\.\.12 of 12\)' "$OUT"
  grep -q '(interrupted)' <<<"$OUT" && bad "run to its end: no line calls it interrupted" "— $(grep '(interrupted)' <<<"$OUT")" || ok "run to its end: no line calls it interrupted"
  if command -v gnuplot >/dev/null; then
    one plot "${T[@]}" >/dev/null && grep -q 'title "train (not interrupted), steps 1-12"' outputs/plot/figure.gp \
      && ok "plot of that run agrees: not interrupted" || bad "plot of that run agrees: not interrupted" "— $(grep -o 'title "[^"]*"' outputs/plot/figure.gp 2>&1 | head -3)"
  fi
  expect_rc "negative control: interrupted as configured (interrupt_at 6)" 0 ddp 2 train "${T[@]}" --fresh
  expect_grep "negative control: interrupted as configured: done line says interrupted" '^train \(interrupted\): done at step 6 \(interrupted as configured\)$' "$OUT"
  expect_grep "negative control: interrupted as configured: its start line says so" '^train \(interrupted\): .* steps 1\.\.6 of 12' "$OUT"
  : > stop.now
  OUT=$(DDPTOK_STOP_FILE=$PWD/stop.now timeout 120 mpirun -x DDPTOK_STOP_FILE -np 2 "$DDPTOK" train "${T[@]}" --set train.interrupt_at=0 --fresh 2>&1); local rc=$?
  rm -f stop.now
  [ $rc -eq 75 ] && grep -q '^train (interrupted): summary: 1 step (1\.\.1 of 12)' <<<"$OUT" && grep -q '^train: .* steps 1\.\.12 of 12' <<<"$OUT" \
    && ok "negative control: planned to its end, stopped by a request at step 1: exit 75, summary says interrupted" \
    || bad "negative control: planned to its end, stopped by a request at step 1: exit 75, summary says interrupted" "— exit $rc: $(grep '^train' <<<"$OUT")"
  if command -v gnuplot >/dev/null; then
    one plot "${T[@]}" >/dev/null 2>&1 && grep -q 'title "interrupted at step 1 (not resumed), steps 1-1"' outputs/plot/figure.gp \
      && ok "plot of the stopped run agrees: interrupted" || bad "plot of the stopped run agrees: interrupted" "— $(grep -o 'title "[^"]*"' outputs/plot/figure.gp 2>&1 | head -3)"
  fi
  expect_rc "its resume runs to step 12" 0 ddp 2 train "${T[@]}" --set train.interrupt_at=0 --resume latest
  expect_grep "the resumed run is called resumed" '^train \(resumed\): done at step 12$' "$OUT"
}

# Issue 38.6e: `run/ddprun ... &` from a script starts with SIGINT ignored (a non-interactive
# shell does that to a background job, and bash cannot trap a signal ignored on entry), so
# kill -INT was silently lost. Now ddprun says so at start, once, with the signal that stops the
# run keeping its work: kill -TERM PID, every rank checkpoints, exit 75. Negative control: started
# with SIGINT at its default (a python wrapper resets it), no such line, and kill -INT is the
# stop request there (exit 75).
everyday_bg_train() {  # everyday_bg_train ARTIFACTS [WRAPPER...]: ddprun train in the background, its pid in EVERYDAY_BG_PID
  local art=$1; shift
  "$@" "$ROOT/run/ddprun" -np 2 train "${T[@]}" --set train.interrupt_at=0 --set train.updates=400000 --set paths.outputs=o-$art --set paths.artifacts=$art >$art.txt 2>&1 &
  EVERYDAY_BG_PID=$!
  wait_lines o-$art/train/interrupted.jsonl 5 60
}
case_ddprun_background_sigint() {
  one prepare "${T[@]}" --set train.updates=400000 --set paths.outputs=o-bg >/dev/null && cp -r o-bg o-fg || { bad "background fixture"; return; }
  local pid rc step
  everyday_bg_train bg; pid=$EVERYDAY_BG_PID
  grep -q '^ddprun: SIGINT is ignored here (started with & by a script): kill -INT does nothing; to stop train keeping its work: kill -TERM '"$pid"' (every rank checkpoints at its next window, exit 75)$' bg.txt \
    && [ "$(grep -c 'SIGINT is ignored' bg.txt)" -eq 1 ] && ok "started with & by a script: one line says SIGINT is ignored and names kill -TERM PID" \
    || bad "started with & by a script: one line says SIGINT is ignored and names kill -TERM PID" "— $(head -3 bg.txt)"
  kill -INT "$pid"; sleep 1
  kill -0 "$pid" 2>/dev/null && ok "as it says: kill -INT does nothing there" || bad "as it says: kill -INT does nothing there"
  kill -TERM "$pid"; wait "$pid"; rc=$?
  step=$(sed -n 's/^train: stop requested .* checkpointing at step \([0-9]*\) and exiting with 75.*/\1/p' bg.txt)
  [ $rc -eq 75 ] && [ -n "$step" ] && [ -d "bg/checkpoints/step-$(printf %04d "$step")" ] \
    && one check-checkpoints "${T[@]}" --set train.updates=400000 --set paths.outputs=o-bg --set paths.artifacts=bg >/dev/null 2>&1 \
    && ok "the line's kill -TERM stops it keeping the work: exit 75, step-$step checkpointed and intact" \
    || bad "the line's kill -TERM stops it keeping the work: exit 75, step-$step checkpointed and intact" "— exit $rc: $(grep -v '^  step' bg.txt | tail -3)"
  everyday_bg_train fg /usr/bin/python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'
  pid=$EVERYDAY_BG_PID
  grep -q 'SIGINT is ignored' fg.txt && bad "negative control: SIGINT at its default: no such line" "— $(head -2 fg.txt)" || ok "negative control: SIGINT at its default: no such line"
  trap_up "$pid"; kill -INT "$pid"; wait "$pid"; rc=$?
  [ $rc -eq 75 ] && grep -q '^ddprun: Ctrl-C: every rank checkpoints at its next window' fg.txt \
    && ok "negative control: there kill -INT is the stop request (exit 75)" || bad "negative control: there kill -INT is the stop request (exit 75)" "— exit $rc: $(grep -v '^  step' fg.txt | tail -3)"
}

# Issue 38.6g: train.init_from left no trace in the output or the JSONL. Now train prints one
# line naming the source and the SHA-256 of θ0 as loaded, and the run's first JSONL record
# carries "init_from" {path, digest}. The digest is checked against one computed apart from the
# loaded parameters: the source checkpoint exported as ddptok's safetensors, put together in θ
# order by model.json's offsets, hashed in Python. Negative controls: without init_from neither
# the line nor the key; another source (the step-6 model) gives another digest, its own.
everyday_theta_digest() {  # everyday_theta_digest CONFIG CHECKPOINT: SHA-256 of its θ, from `export` and Python
  rm -f outputs/model.safetensors outputs/model.json
  one export --config "$1" --checkpoint "$2" >/dev/null || return
  /usr/bin/python3 -c "
import hashlib, json, struct, sys
d = open('outputs/model.safetensors', 'rb').read(); n = struct.unpack('<Q', d[:8])[0]; h = json.loads(d[8:8 + n]); data = d[8 + n:]
meta = json.load(open('outputs/model.json')); theta = bytearray(4 * meta['model']['parameters'])
for t in meta['tensors']:
    a, b = h[t['name']]['data_offsets']; assert h[t['name']]['dtype'] == 'F32'
    theta[4 * t['offset']:4 * t['offset'] + b - a] = data[a:b]
print(hashlib.sha256(theta).hexdigest())"
}
case_init_from_traced() {
  local g="$CONFIGS/gpt-tests.yaml" want want6 got line
  local s=(--config "$g" --set train.updates=1 --set train.interrupt_at=0 --set train.optimizer.lr=0)
  one prepare --config "$g" >/dev/null && ddp 2 train --config "$g" >/dev/null 2>&1 && ddp 2 train --config "$g" --continuous >/dev/null 2>&1 \
    && one export --config "$g" --checkpoint artifacts/continuous/step-0012 --format hf --out hf12 >/dev/null \
    && one export --config "$g" --checkpoint artifacts/checkpoints/step-0006 --format hf --out hf6 >/dev/null || { bad "init_from fixture"; return; }
  want=$(everyday_theta_digest "$g" artifacts/continuous/step-0012); want6=$(everyday_theta_digest "$g" artifacts/checkpoints/step-0006)
  [[ $want =~ ^[0-9a-f]{64}$ ]] && [[ $want6 =~ ^[0-9a-f]{64}$ ]] || { bad "the digests computed apart" "— $want / $want6"; return; }
  expect_rc "train from train.init_from hf12" 0 ddp 2 train "${s[@]}" --set train.init_from=hf12 --set paths.artifacts=a12
  line=$(grep '^train: θ0 from train.init_from' <<<"$OUT")
  [ "$(wc -l <<<"$line")" -eq 1 ] && [ "$line" = "train: θ0 from train.init_from hf12: SHA-256 $want (its $(json outputs/model.json "j['model']['parameters']") parameters as loaded: float32, θ order)" ] \
    && ok "one line names the source and θ0's SHA-256, the digest computed apart from the export" "(${want:0:16}…)" \
    || bad "one line names the source and θ0's SHA-256, the digest computed apart from the export" "— want $want: $line"
  got=$(head -1 outputs/train/interrupted.jsonl | /usr/bin/python3 -c "import json, sys; j = json.load(sys.stdin)['init_from']; print(j['path'], j['digest'])")
  [ "$got" = "hf12 $want" ] && ok "the JSONL's first record: init_from {path, digest}" || bad "the JSONL's first record: init_from {path, digest}" "— $got"
  [ "$(grep -c init_from outputs/train/interrupted.jsonl)" -eq 1 ] && ok "init_from in the first record only" || bad "init_from in the first record only"
  expect_rc "negative control: another source, hf6" 0 ddp 2 train "${s[@]}" --set train.init_from=hf6 --set paths.artifacts=a6
  got=$(head -1 outputs/train/interrupted.jsonl | /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['init_from']['digest'])")
  [ "$want6" != "$want" ] && [ "$got" = "$want6" ] && grep -q "^train: θ0 from train.init_from hf6: SHA-256 $want6 " <<<"$OUT" \
    && ok "negative control: another source gives another digest, its own" || bad "negative control: another source gives another digest, its own" "— $got vs $want6 / $want"
  expect_rc "negative control: without init_from" 0 ddp 2 train "${s[@]}" --set paths.artifacts=a0
  ! grep -q 'θ0 from' <<<"$OUT" && ! grep -q init_from outputs/train/interrupted.jsonl \
    && ok "negative control: without init_from, no θ0 line and no init_from key" || bad "negative control: without init_from, no θ0 line and no init_from key"
}

# Issue 38.6h: llm.c shards put the EOT before each document, so every shard begins with one:
# train and val shards imported with --split-from-names were "2 empty skipped, 1 document cut"
# though nothing was empty or cut. A separator at the stream's start, its end or a split change
# is a boundary; a document ended at a split change is cut only when the next shard goes on
# with its ids. Negative controls: a next shard that does not begin with the EOT says 1 cut;
# two EOTs in a row are 1 empty; the corpus holds the same documents either way.
everyday_llmc_shards() {  # everyday_llmc_shards DIR TRAIN VAL: two llm.c v1 shards, each a python list of ids (EOT 299)
  /usr/bin/python3 -c "
import os, struct, sys
E = 299
d = lambda k: [k * 10 + j for j in range(1, 9)]
os.makedirs(sys.argv[1], exist_ok=True)
for name, toks in (('x_train_000.bin', eval(sys.argv[2])), ('x_val_000.bin', eval(sys.argv[3]))):
    open(os.path.join(sys.argv[1], name), 'wb').write(struct.pack('<256i', 20240520, 1, len(toks), *([0] * 253)) + struct.pack('<%dH' % len(toks), *toks))" "$@"
}
case_llmc_import_summary() {
  printf 'seed: 5\ndata: {vocab_size: 301, min_length: 4, max_length: 32, source: imported}\nmodel: {context: 3, embed_dim: 4, hidden: 8}\ntrain: {sampler: global, global_batch: 2, rank_bands: auto, updates: 3, interrupt_at: 0}\n' > l.yaml
  local I=(--config l.yaml --format llmc --eot 299 --split-from-names) k
  everyday_llmc_shards ok '[E] + d(1) + [E] + d(2) + [E] + d(3)' '[E] + d(4) + [E] + d(5)'
  everyday_llmc_shards cut '[E] + d(1) + [E] + d(2) + [E] + d(3)' 'd(4) + [E] + d(5)'
  everyday_llmc_shards cut2 'd(1) + [E] + d(2) + [E] + d(3)' '[E] + d(4) + [E] + d(5)'
  everyday_llmc_shards empty '[E] + d(1) + [E, E] + d(2) + [E] + d(3)' '[E] + d(4) + [E] + d(5)'
  everyday_llmc_shards after 'd(1) + [E] + d(2) + [E] + d(3) + [E]' 'd(4) + [E] + d(5) + [E]'
  for k in ok cut cut2 empty after; do
    OUT=$(one import "${I[@]}" --input $k --set paths.outputs=o-$k --set paths.artifacts=a-$k 2>&1) || { bad "import of the $k shards" "— $OUT"; return; }
    printf '%s\n' "$OUT" > $k.txt
  done
  expect_grep "llm.c shards, each beginning with the EOT: 5 documents, none empty" '^import: 2 files, .*: 5 documents \(0 empty skipped\), 40 tokens' "$(cat ok.txt)"
  expect_grep "llm.c shards, each beginning with the EOT: no document cut" '\(--split-from-names; 0 documents cut where the split changes between shards\)' "$(cat ok.txt)"
  # (the val shard is read first, as llm.c writes it: the train shard is the one that may go on)
  expect_grep "negative control: the train shard goes on with the val shard's last document (no EOT first): 1 cut" '\(--split-from-names; 1 document cut where' "$(cat cut2.txt)"
  expect_grep "the val shard (read first) without its leading EOT: nothing before it to cut, 0 cut" '\(--split-from-names; 0 documents cut where' "$(cat cut.txt)"
  expect_grep "negative control: two EOTs in a row are 1 empty document" ': 5 documents \(1 empty skipped\)' "$(cat empty.txt)"
  expect_grep "nanoGPT's order (EOT after each document): none empty, none cut" ': 5 documents \(0 empty skipped\).*' "$(cat after.txt)"
  expect_grep "nanoGPT's order: none cut" '0 documents cut where' "$(cat after.txt)"
  local s; s=$(for k in ok cut cut2 empty after; do /usr/bin/python3 -c "
import h5py, sys; f = h5py.File(sys.argv[1]); t, o, sp = f['tokens'][()].tolist(), f['offsets'][()].tolist(), f['split'][()].tolist()
print(sorted((sp[i], t[o[i]:o[i + 1]]) for i in range(len(sp))))" o-$k/data/corpus.h5 2>&1 | sha256sum; done | sort -u | wc -l)
  [ "$s" -eq 1 ] && ok "the five corpora hold the same documents (only the summary differed)" || bad "the five corpora hold the same documents (only the summary differed)" "— $s distinct"
}

# Issue 38.6i: `./ddprun` typed inside run/ looked for run/ddptok ("not built: run make"), and
# `../run/ddprun` typed in a subdirectory ran sub/../ddptok, whose hints printed `./../ddptok`.
# ddprun now resolves its own . and .. and finds the repository's binary above run/. Negative
# controls: with no binary there, one line naming the path it tried and the remedy (exit 2);
# from the repository's top the hint keeps its `./ddptok` form.
case_ddprun_from_run_dir() {
  mkdir -p co/run co/sub bare/run && cp "$DDPTOK" co/ddptok && cp "$ROOT/run/ddprun" co/run/ && cp "$ROOT/run/ddprun" bare/run/ && cp "$cfg" co/tiny.yaml
  OUT=$(cd co/run && timeout 120 ./ddprun -np 2 check-env --config ../tiny.yaml 2>&1); local rc=$?
  [ $rc -eq 0 ] && ok "./ddprun typed inside run/ runs the binary above run/" || bad "./ddprun typed inside run/ runs the binary above run/" "— exit $rc: $(tail -2 <<<"$OUT")"
  OUT=$(cd co/run && timeout 120 bash ddprun -np 2 check-env --config ../tiny.yaml 2>&1); rc=$?
  [ $rc -eq 0 ] && ok "bash ddprun inside run/ too" || bad "bash ddprun inside run/ too" "— exit $rc: $(tail -2 <<<"$OUT")"
  OUT=$(cd co/sub && timeout 120 ../run/ddprun -np 2 train --config ../tiny.yaml 2>&1); rc=$?
  local hint; hint=$(sed -n 's/.*: run `\([^`]*prepare[^`]*\)` first$/\1/p' <<<"$OUT" | head -1)
  [ $rc -eq 2 ] && [ -n "$hint" ] && ! grep -q '\./\.\./' <<<"$OUT" && ok "../run/ddprun from a subdirectory: the prepare hint has no ./../" "(\`$hint\`)" \
    || bad "../run/ddprun from a subdirectory: the prepare hint has no ./../" "— exit $rc: $(grep -v '^---' <<<"$OUT" | head -2)"
  (cd co/sub && timeout 120 bash -c "$hint" >/dev/null 2>&1) && [ -f co/sub/outputs/data/corpus.h5 ] && ok "that hint runs as printed, there" || bad "that hint runs as printed, there" "— $hint"
  OUT=$(cd co && timeout 120 run/ddprun -np 2 train --config tiny.yaml --set paths.outputs=elsewhere 2>&1)
  expect_grep "negative control: from the top, the hint keeps ./ddptok" 'run `\./ddptok prepare --config tiny\.yaml --set paths\.outputs=elsewhere` first$' "$OUT"
  OUT=$(cd bare/run && ./ddprun -np 2 check-env --config x.yaml 2>&1); rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <<<"$OUT")" -eq 1 ] && grep -q "^ddprun: $PWD/bare/ddptok not built (the ddptok beside ddprun, or at the top of its repository): run make in $PWD/bare, or DDPTOK=PATH" <<<"$OUT" \
    && ok "negative control: no binary above run/: one line naming the path tried and the remedy, exit 2" \
    || bad "negative control: no binary above run/: one line naming the path tried and the remedy, exit 2" "— exit $rc: $OUT"
}
