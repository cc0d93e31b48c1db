"""The transports' conformance shim (``flavor``) for the GSSAPI tests."""

from tests.transports.conftest import Flavor, anyio_backend, flavor

__all__ = ["Flavor", "anyio_backend", "flavor"]
