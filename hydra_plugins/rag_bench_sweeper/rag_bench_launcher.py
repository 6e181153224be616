"""rag_bench's Hydra launcher (``hydra/launcher=rag_bench``, the default): :class:`BasicLauncher`
with cheaper per-job bookkeeping, same semantics (see :mod:`rag_bench.fast.launcher`)."""

from __future__ import annotations

from collections.abc import Sequence

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn

from rag_bench.fast.launcher import Logging, RagBenchLauncherConf, launch

# As Hydra's own launchers register theirs: when Hydra scans the plugins, before any composition.
ConfigStore.instance().store(group="hydra/launcher", name="rag_bench", node=RagBenchLauncherConf, provider="rag_bench")


class RagBenchLauncher(BasicLauncher):
    """Hydra's basic launcher (jobs one after the other, in this process), with pickled instead of
    deep copies, the HydraConfig set once per job and logging applied only when it changes."""

    def __init__(self) -> None:
        super().__init__()
        self.logs = Logging()

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.hydra_context is not None and self.config is not None and self.task_function is not None
        return launch(self.config, self.hydra_context, self.task_function, self.logs, job_overrides, initial_job_idx)
