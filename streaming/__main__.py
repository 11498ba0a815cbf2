"""``python -m streaming run PIPELINE``: run one deployment in this process, without Dagster.
``python -m streaming engine``: run the engine that hosts many deployments
(``streaming.engine``)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["engine"]:
        from streaming.engine.serve import main as engine_main

        raise SystemExit(engine_main())
    from streaming.run.job import main

    raise SystemExit(main())
