# Two hosts on this machine: two network namespaces joined by a veth pair, each with its
# own hostname (unshare --uts: Open MPI names its shared-memory files by hostname) and an
# sshd on its own address with a generated key. mpirun --hostfile runs one rank per host
# over TCP; parity must pass and training must equal the one-host result bit for bit.
# Everything runs under timeout and is torn down by PID and namespace name.
# run/ddprun tells mpirun's own failure from a rank's: mpirun -q (which the old ddprun
# passed) hid every Open MPI message, mpirun's own errors too, and any exit above 128 was
# called a rank killed by a signal. Now only the notices about ranks are left out.
case_ddprun_mpirun_error() {
  local rc
  OUT=$(MPIRUN_ARGS="--hostfile /nonexistent" timeout 60 "$ROOT/run/ddprun" -np 1 check-loss Y 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -q 'unable to open the hostfile' <<<"$OUT" && grep -q '^ddprun: mpirun failed (exit [0-9]*) with no rank reported dead' <<<"$OUT" \
    && ok "ddprun: mpirun's own error (a hostfile it cannot open) is shown and named as mpirun's" "(exit $rc)" \
    || { bad "ddprun: mpirun's own error (a hostfile it cannot open) is shown and named as mpirun's" "— exit $rc:"; echo "$OUT" | tail -4 | sed 's/^/       /'; }
}
case_ddprun_mpirun_killed() {
  local rc L=$PWD
  mkdir -p "$L/fake"; printf '#!/bin/bash\nkill -ABRT $$\n' >"$L/fake/mpirun"; chmod +x "$L/fake/mpirun"
  OUT=$(PATH="$L/fake:$PATH" timeout 60 "$ROOT/run/ddprun" -np 2 check-env --config "$CONFIGS/tiny.yaml" 2>&1); rc=$?
  [ $rc -eq 134 ] && grep -q '^ddprun: mpirun itself was killed by signal 6 (ABRT), exit 134, with no rank reported dead' <<<"$OUT" && ! grep -q 'a rank was killed' <<<"$OUT" \
    && ok "ddprun: mpirun itself killed by SIGABRT (a stub mpirun) is mpirun's death, not a rank's" "(exit 134)" \
    || { bad "ddprun: mpirun itself killed by SIGABRT (a stub mpirun) is mpirun's death, not a rank's" "— exit $rc:"; echo "$OUT" | tail -3 | sed 's/^/       /'; }
}
case_ddprun_rank_killed() {
  local rc L=$PWD
  printf '#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && kill -KILL $$\nexec "%s" "$@"\n' "$DDPTOK" >"$L/die1"; chmod +x "$L/die1"
  OUT=$(DDPTOK="$L/die1" timeout 60 "$ROOT/run/ddprun" -np 2 check-env --config "$CONFIGS/tiny.yaml" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 137 ] && grep -qE '^ddprun: (rank 1 \(on [^)]*\)|a rank) was killed by signal 9' <<<"$OUT" && ! grep -qE '^-----|Primary job|mpirun (noticed|detected)' <<<"$OUT" \
    && ok "ddprun: a rank killed by SIGKILL is said in one line, Open MPI's notices left out" "(exit 137)" \
    || { bad "ddprun: a rank killed by SIGKILL is said in one line, Open MPI's notices left out" "— exit $rc:"; echo "$OUT" | tail -4 | sed 's/^/       /'; }
}
# hosts_why: prints why this machine cannot run the cases, nothing when it can (it tries a
# namespace, $ns1, and removes it again when it cannot be used).
hosts_why() {
  local t
  [ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; return; }
  [ -x /usr/sbin/sshd ] || { echo "/usr/sbin/sshd not installed (openssh-server)"; return; }
  for t in ip unshare ssh ssh-keygen; do command -v "$t" >/dev/null || { echo "$t not installed"; return; }; done
  ip netns add "$ns1" 2>/dev/null || { echo "cannot create a network namespace (ip netns add)"; return; }
  # ip netns exec remounts / as a slave: refused in a chroot or an unprivileged container
  t=$(ip netns exec "$ns1" true 2>&1) || { ip netns del "$ns1"; echo "ip netns exec fails here: ${t%%$'\n'*}"; return; }
  t=$(ip netns exec "$ns1" unshare --uts true 2>&1) || { ip netns del "$ns1"; echo "unshare --uts fails here: ${t%%$'\n'*}"; return; }
}
hosts_down() {
  for f in "$H"/sshd-*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  for p in "${hpids[@]}"; do kill "$p" 2>/dev/null; done
  ip netns del "$ns1" 2>/dev/null; ip netns del "$ns2" 2>/dev/null
}
# hosts_up: the two hosts of this case (namespaces named after its subshell's pid, torn down
# when it ends), ssh between them checked; false (the case skipped, or failed) where not.
hosts_up() {
  local id=$BASHPID name i ns n why
  H=$PWD/hosts ns1=ddpt1-$id ns2=ddpt2-$id net=10.231.77
  mkdir -p "$H"
  why=$(hosts_why)
  [ -z "$why" ] || { skip "$CASE" "$why"; return 1; }
  ip netns add "$ns2"
  hpids=()
  trap hosts_down EXIT
  ip link add "va$id" type veth peer name "vb$id"
  ip link set "va$id" netns "$ns1"; ip link set "vb$id" netns "$ns2"
  ip -n "$ns1" addr add "$net.1/24" dev "va$id"; ip -n "$ns2" addr add "$net.2/24" dev "vb$id"
  for n in "$ns1:va$id" "$ns2:vb$id"; do ip -n "${n%%:*}" link set lo up; ip -n "${n%%:*}" link set "${n#*:}" up; done
  ssh-keygen -q -t ed25519 -N '' -f "$H/key"; ssh-keygen -q -t ed25519 -N '' -f "$H/hostkey"
  cp "$H/key.pub" "$H/authorized_keys"
  mkdir -p /run/sshd
  for i in 1 2; do
    cat > "$H/sshd-$i.conf" <<CONF
ListenAddress $net.$i
HostKey $H/hostkey
PidFile $H/sshd-$i.pid
AuthorizedKeysFile $H/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
CONF
    ns=$([ $i = 1 ] && echo "$ns1" || echo "$ns2")
    ip netns exec "$ns" unshare --uts sh -c "hostname ddpt-host$i; exec /usr/sbin/sshd -D -f $H/sshd-$i.conf" & hpids+=($!)
  done
  SSH_OPTS="-i $H/key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=5 -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
  for _ in $(seq 50); do
    name=$(ip netns exec "$ns1" timeout 5 ssh $SSH_OPTS "$net.2" hostname 2>/dev/null) && break; sleep 0.2
  done
  [ "$name" = ddpt-host2 ] && ok "$CASE: ssh from host 1 to host 2 over the veth pair" "($name)" || { bad "$CASE: ssh from host 1 to host 2 over the veth pair" "— got '$name'"; return 1; }
  printf '%s slots=1\n%s slots=1\n' "$net.1" "$net.2" > "$H/hostfile"
}
cfg="$CONFIGS/tiny.yaml"
# on host 1, with its hostname, mpirun over ssh to host 2. ssh does not carry the
# environment: a preset OPENBLAS_CORETYPE (some machines of this kind have one) must reach
# the remote rank too, or its GEMMs run another kernel and the bits differ from one host.
on_host1() {
  timeout -k 5 120 ip netns exec "$ns1" unshare --uts sh -c 'hostname ddpt-host1; exec "$@"' sh \
    mpirun --hostfile "$H/hostfile" -np 2 --map-by node --mca btl tcp,self ${OPENBLAS_CORETYPE:+-x OPENBLAS_CORETYPE} \
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" --mca plm_rsh_args "$SSH_OPTS" "$@"
}
case_ssh() { hosts_up; }
case_check_env() {
  hosts_up || return
  expect_rc "hosts: check-env across two hosts" 0 on_host1 "$DDPTOK" check-env --config "$cfg"
  expect_grep "hosts: check-env puts rank 0 on host 1" 'rank 0: host ddpt-host1.*' "$OUT"
  expect_grep "hosts: check-env puts rank 1 on host 2" 'rank 1: host ddpt-host2' "$OUT"
}
case_parity() {
  hosts_up || return
  prep_ref "$cfg"
  expect_rc "hosts: parity over TCP between two hosts" 0 on_host1 "$DDPTOK" parity --config "$cfg"
}
case_train() {
  hosts_up || return
  local d
  prep_ref "$cfg"
  ddp 2 train --config "$cfg" --continuous --set paths.artifacts=onehost >/dev/null 2>&1
  expect_rc "hosts: train --continuous across two hosts" 0 on_host1 "$DDPTOK" train --config "$cfg" --continuous --set paths.artifacts=twohosts
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" twohosts/continuous/step-0012 onehost/continuous/step-0012) \
    && ok "hosts: two-host training bit-identical to one host" "(max |dtheta| = $d)" || bad "hosts: two-host training bit-identical to one host" "— $d"
}
