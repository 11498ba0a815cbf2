"""``python -m assets.run_host <home>``: the run host (``assets.run_host.serve``)."""

if __name__ == "__main__":
    from assets.run_host.serve import main

    raise SystemExit(main())
