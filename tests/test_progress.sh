# Progress and summaries: rank 0's progress line (step/U, loss, tokens/s, ms/step, ETA) at
# train.log_every (every step for short runs), the end-of-run summary, the same figures in
# the JSONL (the SPEC keys first, unchanged), timestamps in the rank logs, and a progress
# line for long single-process work (none for short work).
cfg="$CONFIGS/tiny.yaml"
fixture_prepared() { one prepare --config "$cfg" >/dev/null; }
case_train_progress() {
  fixture prepared || return
  local n last step6
  expect_rc "progress: train (6 steps)" 0 ddp 2 train --config "$cfg"
  n=$(grep -cE '^  step +[0-9]+/12  loss [0-9.]+  lr [0-9.]+e[-+][0-9]+  tokens +[0-9]+ +[0-9]+ tokens/s +[0-9.]+ ms/step  ETA [0-9:.]+s?(  val [0-9.]+ \([0-9.]+ bits/token\)(  best)?)?$' <<<"$OUT")
  [ "$n" -eq 6 ] && ok "a short run prints a progress line for every step: step/U, loss, tokens, tokens/s, ms/step, ETA" "($n lines)" \
    || { bad "a short run prints a progress line for every step: step/U, loss, tokens, tokens/s, ms/step, ETA" "— $n of 6 lines match:"; echo "$OUT" | head -8 | sed 's/^/       /'; }
  expect_grep "progress: step 6 of 12 is shown as 6/12" '^  step  6/12  loss ' "$OUT"
  expect_grep "progress: the end-of-run summary: steps, wall time, tokens/s, ms/step, final loss" \
    '^train \(interrupted\): summary: 6 steps \(1\.\.6 of 12\) in [0-9.:]+s?, [0-9]+ tokens/s, [0-9.]+ ms/step, final loss [0-9.]+$' "$OUT"
  last=$(grep -o 'loss [0-9.]*$' <<<"$OUT"); step6=$(grep '^  step  6/12' <<<"$OUT" | grep -o 'loss [0-9.]*')
  [ -n "$last" ] && [ "$last" = "$step6" ] && ok "progress: the summary's final loss is step 6's" "($last)" || bad "progress: the summary's final loss is step 6's" "— summary '$last', step 6 '$step6'"
  /usr/bin/python3 - outputs/train/interrupted.jsonl <<'PY' && ok "progress JSONL: the SPEC keys first and unchanged, then updates, elapsed, tokens_per_s, ms_per_step, eta_seconds, time (consistent)" || bad "progress JSONL: the SPEC keys first and unchanged, then updates, elapsed, tokens_per_s, ms_per_step, eta_seconds, time (consistent)"
import json, sys, datetime
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["step"] for l in lines] == list(range(1, 7)), "steps"
for l in lines:
    assert list(l)[:6] == ["step", "loss", "tokens", "rank_tokens", "sequences", "seconds"], list(l)
    assert list(l)[6:12] == ["updates", "elapsed", "tokens_per_s", "ms_per_step", "eta_seconds", "time"], list(l)
    assert l["updates"] == 12 and l["tokens"] == sum(l["rank_tokens"])
    datetime.datetime.strptime(l["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
tok = sum(l["tokens"] for l in lines)
last = lines[-1]
assert abs(last["tokens_per_s"] - tok / last["elapsed"]) <= 0.01 * last["tokens_per_s"] + 0.1, (last, tok)
assert abs(last["ms_per_step"] - 1e3 * last["elapsed"] / 6) < 1e-2, last
assert last["eta_seconds"] == 0 and lines[0]["eta_seconds"] > 0
assert all(a["elapsed"] <= b["elapsed"] for a, b in zip(lines, lines[1:]))
PY
  grep -qE '^time=20[0-9-]{8}T[0-9:]{8}\.[0-9]{3}Z run=interrupted rank=1 step=1 ' outputs/logs/interrupted/rank-1.log \
    && ok "rank logs: every line starts with a UTC timestamp" || { bad "rank logs: every line starts with a UTC timestamp"; head -2 outputs/logs/interrupted/rank-1.log; }
}
# Rank 0's JSONL line stays the same size at any W (docs/scaling.md): every rank's count up to
# W = 64 (PROGRESS_RANK_LIST), then their range {ranks, min, argmin, max, argmax}; written by
# train_progress_step from a count exchange of W ranks (build/jsonl_width, no W processes).
# The bound on the growth is 16 bytes: the line's numbers (W, argmin, argmax, the timings)
# take a few digits more or less from one line to the next; 32 more counts take 32 x 6.
# Negative control: the same bound on the growth, applied to the list (W = 32 against 64), fails.
case_jsonl_width() {
  local w out
  for w in 2 32 64 65 4096; do "$ROOT/build/jsonl_width" "$w" 20 >"w$w.json" || { bad "jsonl_width $w ran"; return; }; done
  /usr/bin/python3 - <<'PY' && ok "JSONL at W = 2, 32, 64: rank_tokens, every rank's count; at W = 65 and 4096: rank_tokens_range, W, the extremes and their ranks, in its place" || bad "JSONL at W = 2, 32, 64: rank_tokens, every rank's count; at W = 65 and 4096: rank_tokens_range, W, the extremes and their ranks, in its place"
import json
for W in (2, 32, 64, 65, 4096):
    d = json.load(open(f"w{W}.json"))
    line, counts = d["line"], [1000 + r * 7919 % 1000 for r in range(W)]
    assert line["tokens"] == sum(counts), (W, line["tokens"])
    if W <= 64:
        assert list(line)[:6] == ["step", "loss", "tokens", "rank_tokens", "sequences", "seconds"], list(line)
        assert line["rank_tokens"] == counts and "rank_tokens_range" not in line, W
    else:
        assert list(line)[:6] == ["step", "loss", "tokens", "rank_tokens_range", "sequences", "seconds"], list(line)
        want = {"ranks": W, "min": min(counts), "argmin": counts.index(min(counts)), "max": max(counts), "argmax": counts.index(max(counts))}
        assert line["rank_tokens_range"] == want and "rank_tokens" not in line, (W, line["rank_tokens_range"], want)
PY
  out=$(/usr/bin/python3 -c 'import json,sys; b={w: json.load(open(f"w{w}.json"))["bytes"] for w in (32, 64, 65, 4096)}; print(b[65], b[4096], b[32], b[64])')
  read -r b65 b4096 b32 b64 <<<"$out"
  [ $((b4096 - b65)) -le 16 ] && ok "rank 0's JSONL line at W = 4096 is the size of W = 65's" "($b4096 vs $b65 bytes)"     || bad "rank 0's JSONL line at W = 4096 is the size of W = 65's" "— $b4096 vs $b65 bytes"
  [ $((b64 - b32)) -gt 16 ] && ok "control: the same bound fails for the per-rank list (W = 64 against 32)" "($b64 vs $b32 bytes)"     || bad "control: the same bound fails for the per-rank list (W = 64 against 32)" "— $b64 vs $b32 bytes"
}
# A configured interval: every 4th step, plus the first and the last.
case_log_every() {
  fixture prepared || return
  local steps
  expect_rc "train --continuous with train.log_every=4" 0 ddp 2 train --config "$cfg" --continuous --set train.log_every=4
  steps=$(grep -oE '^  step +[0-9]+' <<<"$OUT" | awk '{print $2}' | tr '\n' ' ')
  [ "$steps" = "1 4 8 12 " ] && ok "train.log_every=4 prints steps 1 4 8 12" || bad "train.log_every=4 prints steps 1 4 8 12" "— printed '$steps'"
}
# Negative control: the automatic interval of a long run is not every step.
case_auto_interval() {
  local n
  one prepare --config "$cfg" --set train.updates=60 --set paths.outputs=o60 >/dev/null
  OUT=$(ddp 2 train --config "$cfg" --continuous --set train.updates=60 --set paths.outputs=o60 --set paths.artifacts=a60 2>&1)
  n=$(grep -c '^  step ' <<<"$OUT")
  [ "$n" -ge 15 ] && [ "$n" -le 22 ] && ok "a 60-step run prints about 20 progress lines, not 60" "($n)" || bad "a 60-step run prints about 20 progress lines, not 60" "— $n"
}
# Long single-process work shows progress; short work does not.
case_short_prepare() {
  OUT=$(one prepare --config "$cfg" 2>&1)
  ! grep -q '%' <<<"$OUT" && ok "a short prepare prints no progress line" || bad "a short prepare prints no progress line"
}
case_long_prepare() {
  OUT=$(DDPTOK_PROGRESS_SECONDS=0.001 one prepare --config "$cfg" --set data.splits.train=200000 --set paths.outputs=big 2>&1)
  expect_grep "a long prepare (here: a line every 1 ms instead of 2 s) prints progress lines" '^  corpus: sequences: [0-9]+/200040 \([0-9]+ %\), ETA ' "$OUT"
}
case_evaluate_progress() {
  local ev=(--set data.splits.test=20000 --set paths.outputs=oev --set paths.artifacts=aev)
  one prepare --config "$cfg" "${ev[@]}" >/dev/null; ddp 2 train --config "$cfg" "${ev[@]}" --continuous >/dev/null 2>&1
  OUT=$(DDPTOK_PROGRESS_SECONDS=0.001 one evaluate --config "$cfg" "${ev[@]}" --checkpoint aev/continuous/step-0012 2>&1)
  expect_grep "evaluate shows its progress too" '^  evaluate: sequences: [0-9]+/20000 ' "$OUT"
}
