"""A real one-node SLURM cluster for tests: munged, slurmctld and slurmd from Debian's `slurm-wlm`
and `munge` packages, with a slurm.conf and all state in one temporary folder (see
../shared/design/DEPENDENCIES.md, "A real SLURM cluster on one machine"). Needs root (SlurmUser=root)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import free_port

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    absent = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if absent:
        return f"slurm-wlm/munge not installed ({', '.join(absent)} missing; .ci/run installs them with apt-get)"
    if os.geteuid() != 0:
        return "the one-node SLURM cluster runs its daemons as root (SlurmUser=root)"
    return None


def _conf(root: Path, host: str, cpus: int, mem_mb: int, ports: tuple[int, int]) -> str:
    return f"""ClusterName=ragbench
SlurmctldHost={host}
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MpiDefault=none
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SchedulerType=sched/backfill
MinJobAge=600
KillWait=5
NodeName={host} CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _stop(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


@contextmanager
def cluster(root: Path, *, cpus: int = 2, mem_mb: int = 8000, timeout_s: float = 60) -> Iterator[dict[str, str]]:
    """Start munged, slurmctld and slurmd with everything under ``root``; yield the environment
    (SLURM_CONF) that sbatch/squeue/submitit need; stop all three by their pids afterwards."""
    host = socket.gethostname().split(".")[0]
    for d in ("state", "spool", "munge"):
        (root / d).mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # munged runs as the munge user and must reach its folder
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, host, cpus, mem_mb, (free_port(), free_port())))  # beside any other cluster
    env = {**os.environ, "SLURM_CONF": str(conf)}
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        subprocess.run(["mungekey", "-c"], check=True, capture_output=True)
    shutil.chown(root / "munge", "munge", "munge")
    sock = root / "munge" / "munge.socket"
    munge_pid = root / "munge" / "munged.pid"
    subprocess.run(["su", "-s", "/bin/sh", "munge", "-c",
                    f"/usr/sbin/munged --socket={sock} --pid-file={munge_pid} --log-file={root}/munge/munged.log "
                    f"--seed-file={root}/munge/munged.seed"], check=True, capture_output=True, text=True)
    # Slurm's auth/munge plugin finds munged by the socket named in AuthInfo.
    conf.write_text(conf.read_text().replace("AuthType=auth/munge", f"AuthType=auth/munge\nAuthInfo=socket={sock}"))
    try:
        subprocess.run(["/usr/sbin/slurmctld", "-f", str(conf)], env=env, check=True, capture_output=True)
        subprocess.run(["/usr/sbin/slurmd", "-f", str(conf)], env=env, check=True, capture_output=True)
        deadline = time.time() + timeout_s
        while True:
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated"):
                break
            if time.time() > deadline:
                logs = "".join((root / f).read_text()[-1500:] for f in ("slurmctld.log", "slurmd.log")
                               if (root / f).exists())
                raise RuntimeError(f"SLURM node not idle after {timeout_s}s: {out.stdout}{out.stderr}\n{logs}")
            time.sleep(0.5)
        yield env
    finally:
        _stop(root / "slurmd.pid")
        _stop(root / "slurmctld.pid")
        _stop(munge_pid)
