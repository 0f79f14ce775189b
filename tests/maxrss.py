"""maxrss.py OUT CMD...: runs CMD, then writes its peak resident set size (KiB, the kernel's
ru_maxrss of the child) to OUT.<rank> (the MPI rank from Open MPI's environment, else 0) and
exits with CMD's code. Used under mpirun to measure each rank."""
import os
import resource
import subprocess
import sys

rc = subprocess.run(sys.argv[2:]).returncode
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
with open(f"{sys.argv[1]}.{rank}", "w") as f:
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=f)
sys.exit(rc)
