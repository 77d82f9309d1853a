"""What the multi-process test scripts share: the mpirun command line, why a
run cannot start ranks here, and the pids of a launcher's ranks. Standard
library only."""
import os
import shutil

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def mpi_missing(ort_train):
    """Why `ort_train` cannot run ranks on this machine (a SKIPPED line), or None."""
    if not shutil.which("mpirun"):
        return "mpirun is not installed (tools/install_deps.sh installs Open MPI)"
    if not os.path.exists(os.path.join(os.path.dirname(ort_train), "libort_train_mpi.so")):
        return "this build has no MPI plugin (MPI was not found when it was built)"
    return None


def rank_pids(launcher_pid):
    """{rank: pid} of the ort_train processes the launcher `launcher_pid` started."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:  # "pid (comm) state ppid ...": only this job's ranks
                if int(f.read().rsplit(")", 1)[1].split()[1]) != launcher_pid:
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:  # argv[0]; comm is "exe" after the re-exec in main
                if not f.read().split(b"\0")[0].endswith(b"ort_train"):
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        for var in env:
            if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(var.split(b"=", 1)[1])] = int(pid)
    return found
