"""Benchmarks of reag, run by ``make bench`` (``python -m bench``).

Each module here has a ``run() -> None`` that prints its own section; the
umbrella in ``__main__`` runs them in order.
"""
