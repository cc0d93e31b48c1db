"""aiokafka 0.14's ``aiokafka.admin``, over kafkacore (see :mod:`kafkacore.compat`).

``from aiokafka.admin import AIOKafkaAdminClient, NewTopic`` becomes ``from
kafkacore.compat.aiokafka.admin import AIOKafkaAdminClient, NewTopic`` (and
``aiokafka.admin.config_resource`` becomes
``kafkacore.compat.aiokafka.admin.config_resource``; its two names are here
too). The client answers in aiokafka's shapes (its response objects, lists,
dicts); kafkacore's own
:class:`kafkacore.transports.asyncio.AsyncKafkaAdminClient` keeps kafkacore's
typed results. ``docs/admin.md`` maps each call; ``docs/compat.md`` lists what
differs and why.
"""

from .client import AIOKafkaAdminClient
from .config_resource import ConfigResource as ConfigResource
from .config_resource import ConfigResourceType as ConfigResourceType
from .new_partitions import NewPartitions
from .new_topic import NewTopic
from .records_to_delete import RecordsToDelete

__all__ = ["AIOKafkaAdminClient", "NewPartitions", "NewTopic", "RecordsToDelete"]
