"""Large batches are decoded and decompressed with the GIL released."""

from __future__ import annotations

import threading
import time

from kafkacore.records import Compression
from kafkacore.records.compression import compress_py

from ..records.strategies import build
from .paths import NativeBatch, native


def _other_thread_runs_during(work: object) -> bool:
    """Whether a Python thread got to run while ``work()`` was inside the extension."""
    stamps: list[float] = []
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        time.sleep(0.05)  # let the spinner start
        start = time.perf_counter()
        work()  # type: ignore[operator]
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    # Away from the edges, where a GIL switch interval may let the spinner run.
    margin = (end - start) / 4
    return any(start + margin < t < end - margin for t in stamps)


def test_decompression_and_decoding_of_a_large_batch_let_other_threads_run() -> None:
    body = bytes(range(256)) * (48 * 1024 * 1024 // 256)  # 48 MiB, slow to inflate
    stream = compress_py(Compression.GZIP, body, level=1)
    assert _other_thread_runs_during(lambda: native.decompress(1, stream, len(body), 2, "x"))
    # A whole batch: one record holding the 48 MiB value.
    batch = build([(None, body, [], 0)], Compression.GZIP)
    assert _other_thread_runs_during(
        lambda: NativeBatch(batch, max_decompressed_size=len(body) + 1024).arrow_columns()
    )
