"""The authoring API: what a pipeline is (topics, value schema, transform, table kind, version),
how pipelines are found (the registry) and fingerprinted. The base of ``streaming``: it imports no
other ``streaming`` subpackage."""
