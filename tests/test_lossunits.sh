# Loss units and labels: the sequence unit has its own reference, parity and rejected
# controls (token-weighting the sequence objective among them); ignored labels are counted
# right where padded, unlabelled and supervised counts all differ on every rank; the
# balanced case shows why balanced tests cannot catch the mean of means.
cfg="$CONFIGS/minimum.yaml"
parity_run() {  # NP SETS...: prepare, reference, parity; leaves OUT and outputs/parity.json
  local np=$1; shift
  prep_ref "$cfg" "$@" && ddp "$np" parity --config "$cfg" "$@"
}
verdicts() { json outputs/parity.json "' '.join(m + '=' + ('pass' if v['pass'] else 'reject') for m, v in j['modes'].items())"; }
sequence_unit() {  # W
  local w=$1 v
  local sets=(--set train.world_size=$w --set train.rank_bands=auto --set train.loss_unit=sequence --set data.unsupervised_prefix=40)
  expect_rc "sequence unit W=$w (prefix 40 leaves some sequences unlabelled): parity" 0 parity_run $w "${sets[@]}"
  v=$(verdicts)
  [ "$v" = "global-token=reject global-sequence=pass mean-of-means=reject extra-accumulation-division=reject padding-in-denominator=reject" ] \
    && ok "sequence unit W=$w: product passes; token-weighting, mean of means, extra division, empty slots rejected" \
    || bad "sequence unit W=$w: product passes; token-weighting, mean of means, extra division, empty slots rejected" "— $v"
}
case_sequence_w2() { sequence_unit 2; }
case_sequence_w3() { sequence_unit 3; }
# Token unit: sequence-weighting the token objective is rejected too.
case_token_unit() {
  expect_rc "token unit: parity" 0 parity_run 2
  local v; v=$(json outputs/parity.json "j['modes']['global-sequence']['pass'], j['modes']['global-sequence']['expected']")
  [ "$v" = "False rejected" ] && ok "token unit: sequence-weighting (global-sequence) rejected" || bad "token unit: sequence-weighting (global-sequence) rejected" "— $v"
}
# Ignored labels: prefix 5 and token 3 ignored; per rank padded > real > supervised.
case_ignored_labels() {
  local sets=(--set data.unsupervised_prefix=5 --set data.ignore_token=3 --set train.rank_bands=auto --set train.world_size=3)
  expect_rc "ignored labels (prefix 5 + ignore_token 3, W=3): parity" 0 parity_run 3 "${sets[@]}"
  local counts distinct mine theirs
  counts=$(/usr/bin/python3 "$ROOT/tests/label_counts.py" outputs 5 3 0)
  echo "$counts" | sed 's/^/       padded real supervised: /'
  distinct=$(awk '$1 > $2 && $2 > $3 {n++} END {print n + 0}' <<<"$counts")
  [ "$distinct" -eq 3 ] && ok "ignored labels: padded, unlabelled and supervised counts differ on every rank" \
    || bad "ignored labels: padded, unlabelled and supervised counts differ on every rank" "— $counts"
  mine=$(json outputs/parity.json "' '.join(map(str, j['rank_counts']))"); theirs=$(awk '{print $3}' <<<"$counts" | tr '\n' ' ' | sed 's/ $//')
  [ "$mine" = "$theirs" ] && ok "ignored labels: ddptok's per-rank supervised counts equal an independent count" "($mine)" \
    || bad "ignored labels: ddptok's per-rank supervised counts equal an independent count" "— ddptok $mine, independent $theirs"
}
case_ignore_token_range() {
  expect_rc "data.ignore_token out of range is refused" 2 one prepare --config "$cfg" --set data.ignore_token=128
}
# Balanced: every sequence carries exactly 10 labels, so every rank holds 80 tokens.
case_balanced() {
  expect_rc "balanced counts (data.max_labels 10): parity" 0 parity_run 2 --set data.max_labels=10
  local v; v=$(json outputs/parity.json "j['rank_counts'], j['modes']['mean-of-means']['expected'], j['modes']['mean-of-means']['pass'], j['modes']['global-sequence']['expected']")
  [ "$v" = "[80, 80] coincides True coincides" ] && ok "balanced counts: the mean of means coincides — a balanced test cannot catch it" \
    || bad "balanced counts: the mean of means coincides — a balanced test cannot catch it" "— $v"
}
