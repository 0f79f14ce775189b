# Docker files, checked statically (no Docker engine runs here); a deliberately broken
# compose file must fail the same check.
out=$(/usr/bin/python3 "$ROOT/tests/check_docker.py" "$ROOT") && ok "docker/compose.yaml and docker/Dockerfile pass their static checks" \
  || { bad "docker static checks"; echo "$out"; }
D=$(workdir); mkdir -p "$D/docker" "$D/run"
cp -r "$ROOT/include" "$ROOT/src" "$ROOT/cuda" "$ROOT/configs" "$ROOT/Makefile" "$D/"; cp "$ROOT/run/install-deps.sh" "$D/run/"
ln -s "$ROOT/ddptok" "$D/ddptok"; cp "$ROOT/docker/Dockerfile" "$D/docker/"
sed 's/count: 2/count: 1/; s/"--dual"/"--duel"/' "$ROOT/docker/compose.yaml" | sed 's/check-env/check-envy/' > "$D/docker/compose.yaml"
out=$(/usr/bin/python3 "$ROOT/tests/check_docker.py" "$D")
[ $? -ne 0 ] && grep -q "expected a reservation of 2" <<<"$out" && grep -q "is not a ddptok command" <<<"$out" \
  && ok "negative control: a compose file with 1 GPU for dual and an unknown command is rejected" || { bad "docker negative control"; echo "$out"; }
rm -rf "$D"
