# Docker files, checked statically (no Docker engine runs here); a deliberately broken
# compose file must fail the same check.
case_static() {
  local out
  out=$(/usr/bin/python3 "$ROOT/tests/check_docker.py" "$ROOT") && ok "docker/compose.yaml and docker/Dockerfile pass their static checks" \
    || { bad "docker/compose.yaml and docker/Dockerfile pass their static checks"; echo "$out"; }
}
# A copy of what check_docker.py reads, its compose.yaml left to the case.
fixture_tree() {
  mkdir -p docker run
  cp -r "$ROOT/include" "$ROOT/src" "$ROOT/cuda" "$ROOT/configs" "$ROOT/Makefile" .; cp "$ROOT/run/install-deps.sh" run/
  ln -s "$ROOT/ddptok" ddptok; cp "$ROOT/docker/Dockerfile" docker/
}
case_compose_broken() {
  fixture tree || return
  local n="negative control: a compose file with 1 GPU for dual and an unknown command is rejected" out
  sed 's/count: 2/count: 1/; s/"--dual"/"--duel"/' "$ROOT/docker/compose.yaml" | sed 's/check-env/check-envy/' > docker/compose.yaml
  out=$(/usr/bin/python3 "$ROOT/tests/check_docker.py" "$PWD")
  [ $? -ne 0 ] && grep -q "expected a reservation of 2" <<<"$out" && grep -q "is not a ddptok command" <<<"$out" \
    && ok "$n" || { bad "$n"; echo "$out"; }
}
# The gpu service's former default (check-env with train.world_size=1 but the file's two
# bands) exits 2 at its first start: ddptok --check must catch it; so must a documented
# line whose world size does not match the service's ranks, and a build that cannot show
# the commit.
case_compose_check() {
  fixture tree || return
  local n="negative control: the old gpu default, a world size the service cannot start and a build without the commit are rejected" out
  sed 's/, "--set", "train.rank_bands=auto"\]/]/; s/run --rm dual parity --config configs\/minimum.yaml/run --rm dual parity --config configs\/minimum.yaml --set train.world_size=3 --set train.rank_bands=auto/; /^ *DDPTOK_VERSION: /d' \
    "$ROOT/docker/compose.yaml" > docker/compose.yaml
  out=$(/usr/bin/python3 "$ROOT/tests/check_docker.py" "$PWD")
  [ $? -ne 0 ] && grep -q "service gpu: default command: ddptok --check exits 2: .*train.rank_bands: 2 bands for train.world_size 1" <<<"$out" \
    && grep -q "documented: run --rm dual parity .*train.world_size 3 but the service starts 2 rank(s)" <<<"$out" \
    && grep -q "the build does not pass DDPTOK_VERSION" <<<"$out" \
    && ok "$n" || { bad "$n"; echo "$out"; }
}
