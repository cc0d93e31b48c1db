"""aiokafka's ``aiokafka.errors``: every name, bound to what kafkacore raises (see
:mod:`kafkacore.compat.errors`, shared with kafka-python's names)."""

from kafkacore.compat.errors import *  # noqa: F403
from kafkacore.compat.errors import __all__ as __all__
