"""Running one function on several threads at once, each on its own database connection."""

import threading

from django.db import connections


def run_together(function, count: int = 2, timeout: float = 60) -> list:
    """Call `function()` on `count` threads released together by a barrier; the results, in
    finishing order. Each thread closes its connections when done."""
    barrier, results = threading.Barrier(count), []

    def run():
        try:
            barrier.wait()
            results.append(function())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return results
