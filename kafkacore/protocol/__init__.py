"""Kafka wire protocol: generated messages, headers, framing, API registry, error codes.

See docs/codec.md. Entry points: :mod:`kafkacore.protocol.messages`,
:mod:`kafkacore.protocol.api`, :mod:`kafkacore.protocol.framing`,
:mod:`kafkacore.protocol.error_codes`, :mod:`kafkacore.protocol.enums`.
"""
