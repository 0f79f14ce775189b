"""check_docker.py ROOT: static checks of docker/Dockerfile and docker/compose.yaml (no
Docker engine runs here). Compose: only keys of the Compose specification, the two
services with their GPU reservations, mpirun -np 2 for `dual`, the settings MPI and NCCL
need in containers, every path and command named exists, and every command line — each
service's default and each `docker compose ... run --rm SERVICE ARGS` the file's header
documents — passes `ddptok --check` (the options and the config parsed and validated,
nothing run; train.world_size must equal the service's rank count). The image's
--version: the build passes DDPTOK_VERSION. Dockerfile: every COPY source
exists, the build runs make with CUDA, the entrypoint is the built binary, and every
Debian package run/install-deps.sh needs for the build is installed. Prints failures."""
import os
import re
import subprocess
import sys

import yaml

root = sys.argv[1]
fail = []
TOP = {"name", "services", "networks", "volumes", "configs", "secrets", "include"}
SERVICE = {"build", "image", "working_dir", "volumes", "shm_size", "ipc", "ulimits", "environment", "deploy",
           "command", "entrypoint", "cap_add", "devices", "runtime", "user", "init", "network_mode", "env_file"}
with open(f"{root}/docker/compose.yaml") as f:
    compose = yaml.safe_load(f)
for k in compose:
    if k not in TOP and not k.startswith("x-"):
        fail.append(f"compose: unknown top-level key {k}")
services = compose.get("services", {})
if set(services) != {"gpu", "dual"}:
    fail.append(f"compose: services {sorted(services)}, expected gpu and dual")
help_text = subprocess.run([f"{root}/ddptok", "--help"], capture_output=True, text=True).stdout
commands = set(re.findall(r"^  ([a-z-]+) ", help_text, re.M))
for name, s in services.items():
    for k in s:
        if k not in SERVICE:
            fail.append(f"compose: service {name}: unknown key {k}")
    b = s.get("build", {})
    ctx = os.path.normpath(os.path.join(root, "docker", b.get("context", ".")))
    if ctx != os.path.normpath(root) or not os.path.isfile(os.path.join(ctx, b.get("dockerfile", "Dockerfile"))):
        fail.append(f"compose: service {name}: build context/dockerfile do not name the repository's docker/Dockerfile")
    for v in s.get("volumes", []):
        host = os.path.normpath(os.path.join(root, "docker", v.split(":")[0]))
        if not host.startswith(os.path.normpath(root)) or (v.endswith(":ro") and not os.path.exists(host)):
            fail.append(f"compose: service {name}: volume {v} does not name a path of the repository")
    if s.get("shm_size") is None or s.get("ulimits", {}).get("memlock") != -1:
        fail.append(f"compose: service {name}: needs shm_size and an unlimited memlock")
    if s.get("environment", {}).get("OMPI_MCA_btl_vader_single_copy_mechanism") != "none":
        fail.append(f"compose: service {name}: needs OMPI_MCA_btl_vader_single_copy_mechanism=none")
    devs = s.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
    want = 1 if name == "gpu" else 2
    if not devs or devs[0].get("driver") != "nvidia" or devs[0].get("count") != want or "gpu" not in devs[0].get("capabilities", []):
        fail.append(f"compose: service {name}: expected a reservation of {want} NVIDIA GPU(s)")
    cmd = s.get("command", [])
    if not cmd or cmd[0] not in commands:
        fail.append(f"compose: service {name}: command {cmd[:1]} is not a ddptok command ({sorted(commands)})")
    if "--config" in cmd and not os.path.isfile(os.path.join(root, cmd[cmd.index("--config") + 1])):
        fail.append(f"compose: service {name}: config {cmd[cmd.index('--config') + 1]} does not exist")

# Every command line through `ddptok --check`, run from the repository root (the
# containers' /work holds the same configs/). Ranks: mpirun -np N in the entrypoint, else 1.
def ranks_of(s):
    ep = s.get("entrypoint", [])
    return int(ep[ep.index("-np") + 1]) if "mpirun" in ep[:1] and "-np" in ep else 1

lines = [(name, s.get("command", []), f"service {name}: default command") for name, s in services.items()]
header = open(f"{root}/docker/compose.yaml").read()
for m in re.finditer(r"^#\s+docker compose -f docker/compose.yaml run --rm (\S+) (.+)$", header, re.M):
    lines.append((m.group(1), m.group(2).split(), f"documented: run --rm {m.group(1)} {m.group(2)}"))
for name, args, what in lines:
    if name not in services or not args:
        fail.append(f"compose: {what}: no such service or no command")
        continue
    r = subprocess.run([f"{root}/ddptok", "--check", *args], capture_output=True, text=True, cwd=root)
    if r.returncode != 0:
        fail.append(f"compose: {what}: ddptok --check exits {r.returncode}: {r.stderr.strip()}")
        continue
    w = re.search(r"distributed: .*train.world_size (\d+)[;)]", r.stdout)  # "; peak per rank …" may follow
    if w and int(w.group(1)) != ranks_of(services[name]):
        fail.append(f"compose: {what}: train.world_size {w.group(1)} but the service starts {ranks_of(services[name])} rank(s)")
for name, s in services.items():
    args = s.get("build", {}).get("args") or {}
    if "DDPTOK_VERSION" not in args:
        fail.append(f"compose: service {name}: the build does not pass DDPTOK_VERSION (the image's --version)")
if not re.search(r"^ARG DDPTOK_VERSION", df := open(f"{root}/docker/Dockerfile").read(), re.M) or "DDPTOK_VERSION=" not in \
        "".join(re.findall(r"^RUN make .*$", df, re.M)):
    fail.append("Dockerfile: does not take ARG DDPTOK_VERSION into make (the image's --version)")

ep = services.get("dual", {}).get("entrypoint", [])
if ep[:3] != ["mpirun", "-np", "2"] or ep[-1] != "/opt/ddptok/ddptok":
    fail.append(f"compose: dual must run mpirun -np 2 /opt/ddptok/ddptok, has {ep}")

df = open(f"{root}/docker/Dockerfile").read()
for src in re.findall(r"^COPY\s+(\S+)\s+\S+", df, re.M):
    if not os.path.exists(os.path.join(root, src)):
        fail.append(f"Dockerfile: COPY source {src} does not exist")
if not re.search(r"^RUN make CUDA=1", df, re.M):
    fail.append("Dockerfile: does not build with make CUDA=1")
if '/opt/ddptok/ddptok' not in re.findall(r'^ENTRYPOINT \["([^"]+)"', df, re.M) or "WORKDIR /opt/ddptok" not in df:
    fail.append("Dockerfile: the entrypoint is not the binary built in /opt/ddptok")
deps = open(f"{root}/run/install-deps.sh").read()
base = re.search(r"pkgs=\(([^)]*)\)", deps).group(1).split()
for p in base:
    if p not in df:
        fail.append(f"Dockerfile: does not install {p} (run/install-deps.sh needs it)")
for line in fail:
    print("FAIL", line)
sys.exit(1 if fail else 0)
