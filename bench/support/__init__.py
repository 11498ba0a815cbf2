"""What the benchmarks and the tests both use to drive and check a platform from outside it:
private settings on free ports (``settings``), producers of demo-like records (``producing``),
the plain-Python reference replay every table is compared with (``reference``) and topic
clean-up (``broker``). It lives with the benchmarks, which run as programs, so that nothing run
outside pytest imports the tests; the tests import it from here."""
