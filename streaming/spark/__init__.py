"""The SparkSession the platform's work runs in: its settings, its Python environment, and the
driver JVM's class archive that halves its start-up. Nothing is started at import; a session is
built only when asked for (``streaming.spark.session``)."""
