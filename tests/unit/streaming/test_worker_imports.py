"""What a Spark Python worker imports to run the source and the sink stays light.

Every worker process unpickles the source's reader and the sink's writer (or a plan's task, which
publishes), which imports ``streaming`` and the authoring API. pandas, pyarrow.dataset, pydantic
(the comparison's models, the settings) and deltalake cost about a fifth of a second each per
process and serve none of them, so they load on first use. The processes that only plan the
source (its creation, its read planning, the streaming source's runner) import its module and
never decode a record: they stay without pandas (about 40 MB each).
"""

import subprocess
import sys

from streaming.settings import REPO_ROOT
from streaming.spark.worker_daemon import TASK_MODULES

# What every worker has loaded: the modules its daemon (``streaming.spark.worker_daemon``)
# imports before forking it.
WORKER_MODULES = TASK_MODULES
HEAVY = ("pandas", "pyarrow.dataset", "pydantic", "great_expectations", "dagster", "deltalake")


PLANNING_MODULES = ("streaming.kafka.source",)


def heavy_imports(modules: tuple[str, ...]) -> str:
    """The heavy modules a fresh process has loaded after importing ``modules``."""
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_the_source_and_the_sink_import_nothing_heavy():
    assert heavy_imports(WORKER_MODULES) == ""


def test_planning_the_source_imports_nothing_heavy():
    assert heavy_imports(PLANNING_MODULES) == ""
