"""kafka-python's ``kafka.errors``: every name, bound to what kafkacore raises (see
:mod:`kafkacore.compat.errors`, shared with aiokafka's names)."""

from kafkacore.compat.errors import *  # noqa: F403
from kafkacore.compat.errors import __all__ as __all__
