# The runner itself (tests/run.sh, tests/lib.sh): --list, one case at a time, every case in a
# fresh directory (kept when it fails), fixtures built once per group run and copied, a case
# that stops early or checks nothing failing, unknown names failing with "did you mean",
# check names unique and never "...". Each with a negative control: temporary group files
# (DDPTOK_TESTS_DIR) that break the rule must fail the run.
RUN="$ROOT/tests/run.sh"
unset DDPTOK_TESTS_DIR  # the suite's own groups, unless a case names its temporary ones
# lint_names FILE...: prints every line of FILE that passes a check a name starting with "..."
# (any quoted string that starts with three dots).
lint_names() { grep -nE "[\"']\.\.\." "$@" | grep -vE '^([^:]+:)?[0-9]+: *#'; }  # comments aside
# drop_kept OUTPUT: removes the directories an inner run kept for its failed cases.
drop_kept() { local d; for d in $(grep -oE 'its directory is kept: .*/ddptok-[a-z]+-[a-z_]+\.[A-Za-z0-9]+$' <<<"$1" | sed 's/^its directory is kept: //'); do rm -rf "$d"; done; }
# group NAME: writes tg/test_NAME.sh from stdin (a temporary group for DDPTOK_TESTS_DIR=tg),
# each line's leading '|' removed (so that this file's own cases are the only ones found here).
group() { mkdir -p tg && sed 's/^|//' > "tg/test_$1.sh"; }

case_list() {
  local all n
  all=$(bash "$RUN" --list); n=$(grep -c . <<<"$all")
  ! grep -vqE '^[a-z0-9]+:[a-z0-9_]+$' <<<"$all" && [ -z "$(sort <<<"$all" | uniq -d)" ] && [ "$n" -ge 100 ] \
    && ok "runner --list: every case as GROUP:CASE, one a line, none twice" "($n cases)" \
    || bad "runner --list: every case as GROUP:CASE, one a line, none twice" "— $n lines; odd or repeated: $(grep -vE '^[a-z0-9]+:[a-z0-9_]+$' <<<"$all" | head -3) $(sort <<<"$all" | uniq -d | head -3)"
  local groups; groups=$(bash "$RUN" --groups)
  local missing; missing=$(for g in $groups; do grep -q "^$g:" <<<"$all" || echo "$g"; done)
  [ -z "$missing" ] && ok "runner --list: every group of run.sh's list has its cases listed" || bad "runner --list: every group of run.sh's list has its cases listed" "— none for: $missing"
  [ "$(bash "$RUN" --list unit data)" = "$(grep -E '^(unit|data):' <<<"$all")" ] && ok "runner --list GROUP...: only those groups' cases" \
    || bad "runner --list GROUP...: only those groups' cases"
}
case_group_names() {
  local groups files
  groups=$(bash "$RUN" --groups | sort)
  files=$(cd "$ROOT/tests" && ls test_*.sh | sed 's/^test_//; s/\.sh$//' | sort)
  [ "$groups" = "$files" ] && ok "runner: its group list is exactly the tests/test_*.sh files" "($(wc -l <<<"$groups") groups)" \
    || bad "runner: its group list is exactly the tests/test_*.sh files" "— $(diff <(echo "$groups") <(echo "$files") | grep '^[<>]' | tr '\n' ' ')"
  # close_pairs NAME...: every pair of names one edit apart
  close_pairs() { local a b; for a; do for b; do [[ $a < $b ]] && [ "$(lib_distance "$a" "$b")" -le 1 ] && echo "$a/$b"; done; done; }
  local close; close=$(close_pairs $groups)
  [ -z "$close" ] && ok "runner: no two group names differ by one letter" || bad "runner: no two group names differ by one letter" "— $close"
  [ "$(close_pairs unit units config)" = "unit/units" ] && ok "negative control: group names unit and units are found one letter apart" \
    || bad "negative control: group names unit and units are found one letter apart" "— $(close_pairs unit units config)"
}
case_unknown_names() {
  OUT=$(bash "$RUN" faultz 2>&1); local rc=$?
  [ $rc -ne 0 ] && grep -q '^FAIL no such test group: faultz (did you mean faults?)$' <<<"$OUT" && [ "$(tail -1 <<<"$OUT")" = "0 passed, 1 failed, 0 skipped" ] \
    && ok "runner: an unknown group fails, named, with did you mean" || { bad "runner: an unknown group fails, named, with did you mean" "— exit $rc"; tail -4 <<<"$OUT"; }
  OUT=$(bash "$RUN" unit:philx 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -q 'unit: no such case: unit:philx (did you mean unit:philox?)$' <<<"$OUT" && [ "$(tail -1 <<<"$OUT")" = "0 passed, 1 failed, 0 skipped" ] \
    && ok "runner: an unknown case fails, named, with did you mean" || { bad "runner: an unknown case fails, named, with did you mean" "— exit $rc"; tail -4 <<<"$OUT"; }
  OUT=$(bash "$RUN" unit:zzzzzzzz 2>&1)
  grep -q 'no such case: unit:zzzzzzzz$' <<<"$OUT" && ok "runner: no did-you-mean for a name close to none" || bad "runner: no did-you-mean for a name close to none" "— $(grep 'no such' <<<"$OUT")"
  OUT=$(bash "$RUN" --list nosuch 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -q 'no such test group: nosuch' <<<"$OUT" && ok "runner --list of an unknown group fails, naming it" || bad "runner --list of an unknown group fails, naming it" "— exit $rc: $OUT"
}
case_duplicate_names() {
  group twins <<'G'
|case_a() { ok "twin check"; }
|case_b() { ok "twin check"; }
G
  group distinct <<'G'
|case_a() { ok "first distinct check"; }
|case_b() { ok "second distinct check"; }
G
  OUT=$(DDPTOK_TESTS_DIR=$PWD/tg bash "$RUN" twins 2>&1); local rc=$?
  [ $rc -ne 0 ] && grep -q "^FAIL two checks share the name 'twin check': twins:a twins:b$" <<<"$OUT" && [ "$(tail -1 <<<"$OUT")" = "2 passed, 1 failed, 0 skipped" ] \
    && ok "negative control: two checks sharing a name fail the run, both cases named" || { bad "negative control: two checks sharing a name fail the run, both cases named" "— exit $rc"; tail -5 <<<"$OUT"; }
  OUT=$(DDPTOK_TESTS_DIR=$PWD/tg bash "$RUN" distinct 2>&1); rc=$?
  [ $rc -eq 0 ] && [ "$(tail -1 <<<"$OUT")" = "2 passed, 0 failed, 0 skipped" ] \
    && ok "runner: checks with distinct names pass (the control of the duplicate-name check)" || { bad "runner: checks with distinct names pass (the control of the duplicate-name check)" "— exit $rc"; tail -5 <<<"$OUT"; }
}
case_ellipsis_names() {
  local dots; dots=$(printf '\x2e\x2e\x2e')
  printf '|case_a() { ok "%s and so on"; }\n' "$dots" | group dots
  OUT=$(DDPTOK_TESTS_DIR=$PWD/tg bash "$RUN" dots 2>&1); local rc=$?
  [ $rc -ne 0 ] && grep -q "^FAIL a check name starts with '$dots': '$dots and so on' (dots:a)$" <<<"$OUT" && [ "$(tail -1 <<<"$OUT")" = "1 passed, 1 failed, 0 skipped" ] \
    && ok "negative control: a check name starting with three dots fails the run" || { bad "negative control: a check name starting with three dots fails the run" "— exit $rc"; tail -5 <<<"$OUT"; }
  local found; found=$(cd "$ROOT" && lint_names tests/test_*.sh tests/lib.sh)
  [ -z "$found" ] && ok "runner: no group file passes a check name starting with three dots (static)" \
    || bad "runner: no group file passes a check name starting with three dots (static)" "— $(head -3 <<<"$found")"
  [ -n "$(lint_names tg/test_dots.sh)" ] && ok "negative control: the static three-dots lint finds one in a temporary group file" \
    || bad "negative control: the static three-dots lint finds one in a temporary group file"
}
# Cases in fresh directories, fixtures built once and copied, failures kept, early stops and
# empty cases failing; one case alone, and the same verdict as in the whole group.
case_isolation() {
  mkdir seen; : > builds
  group iso <<'G'
|fixture_base() { echo original > f; echo built >> "$BUILDS"; }
|case_first() { fixture base; echo changed > f; touch mine; echo "$PWD" > "$SEEN/first"; ok "iso first"; }
|case_second() { fixture base; echo "$PWD" > "$SEEN/second"; [ "$(cat f)" = original ] && [ ! -e mine ] && ok "iso second: a fresh copy" || bad "iso second: a fresh copy"; }
|case_failing() { echo "$PWD" > "$SEEN/failing"; touch evidence; bad "iso failing"; }
|case_stops() { ok "iso stops: before"; exit 3; }
|case_empty() { :; }
G
  OUT=$(BUILDS=$PWD/builds SEEN=$PWD/seen DDPTOK_TESTS_DIR=$PWD/tg bash "$RUN" iso 2>&1); local rc=$?
  local first second failing; first=$(cat seen/first) second=$(cat seen/second) failing=$(cat seen/failing)
  [ $rc -ne 0 ] && [ "$(tail -1 <<<"$OUT")" = "3 passed, 3 failed, 0 skipped" ] && grep -q "^  iso:stops: stopped before its end (exit 3)$" <<<"$OUT" \
    && grep -q "^  iso:empty: ran no check$" <<<"$OUT" && grep -q "^  iso:failing: iso failing$" <<<"$OUT" \
    && ok "runner: a case that fails, stops early (exit) or checks nothing is a failure; the others still run" \
    || { bad "runner: a case that fails, stops early (exit) or checks nothing is a failure; the others still run" "— exit $rc"; tail -12 <<<"$OUT"; }
  [ "$(grep -c built builds)" -eq 1 ] && ok "runner: a fixture two cases use is built once per group run" || bad "runner: a fixture two cases use is built once per group run" "— built $(grep -c built builds) times"
  [ -n "$first" ] && [ "$first" != "$second" ] && [ ! -e "$first" ] && [ ! -e "$second" ] && [ "$first" != "$CASE_DIR" ] \
    && ok "runner: each case in its own fresh directory, removed after it passed" || bad "runner: each case in its own fresh directory, removed after it passed" "— '$first' '$second'"
  [ -e "$failing/evidence" ] && grep -qF "iso:failing failed: its directory is kept: $failing" <<<"$OUT" && grep -qF "  iso:failing: $failing" <<<"$OUT" \
    && ok "runner: a failed case's directory is kept and its path printed" || bad "runner: a failed case's directory is kept and its path printed" "— '$failing'"
  drop_kept "$OUT"
  OUT=$(BUILDS=$PWD/builds SEEN=$PWD/seen DDPTOK_TESTS_DIR=$PWD/tg bash "$RUN" iso:second 2>&1); rc=$?
  [ $rc -eq 0 ] && [ "$(tail -1 <<<"$OUT")" = "1 passed, 0 failed, 0 skipped" ] && [ "$(grep -c '^-- ' <<<"$OUT")" -eq 1 ] && [ "$(grep -c built builds)" -eq 2 ] \
    && ok "runner: GROUP:CASE runs that case alone (its fixture built for it), the same verdict" || { bad "runner: GROUP:CASE runs that case alone (its fixture built for it), the same verdict" "— exit $rc"; tail -4 <<<"$OUT"; }
  OUT=$(BUILDS=$PWD/builds SEEN=$PWD/seen DDPTOK_TESTS_DIR=$PWD/tg bash "$RUN" iso:second iso:first iso:second 2>&1)
  [ "$(grep '^-- ' <<<"$OUT" | tr '\n' ' ')" = "-- iso:second -- iso:first " ] && [ "$(tail -1 <<<"$OUT")" = "2 passed, 0 failed, 0 skipped" ] \
    && ok "runner: cases run in the order named, each once" || bad "runner: cases run in the order named, each once" "— $(grep '^-- ' <<<"$OUT" | tr '\n' ' ')"
}
