"""The demo application: fraud-detection pipelines written against ``streaming.define``."""
