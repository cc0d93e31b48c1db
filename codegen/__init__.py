"""Code generator for kafkacore's protocol layer (not part of the installed package).

Run ``python -m codegen`` from the repository root. It reads Kafka's JSON
message schemas and ``Errors.java`` from the kafka-clients jars in the Maven
cache (fetching them with ``mvn`` if needed) and rewrites the generated
modules under ``kafkacore/protocol/``. See docs/codec.md.
"""
