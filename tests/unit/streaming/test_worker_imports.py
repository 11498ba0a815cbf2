"""What a Spark Python worker imports to run the source and the sink stays light.

Every worker process unpickles the source's reader and the sink's writer, which imports
``streaming`` and the authoring API. pandas, pyarrow.dataset and the comparison's pydantic models
cost about a fifth of a second each per process and serve neither, so they load on first use.
"""

import subprocess
import sys

from streaming.settings import REPO_ROOT

WORKER_MODULES = (
    "streaming.kafka.reader",
    "streaming.kafka.decode",
    "streaming.run.executor_writes",
)
HEAVY = ("pandas", "pyarrow.dataset", "pydantic", "great_expectations", "dagster", "deltalake")


def test_the_source_and_the_sink_import_nothing_heavy():
    script = (
        "import importlib, sys\n"
        f"for name in {WORKER_MODULES!r}: importlib.import_module(name)\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""
