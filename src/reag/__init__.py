"""reag: acceptance testing for LLM-based software, run on live traffic.

The ``reag`` package is the core library: domain logic with no Kafka in it.
Kafka wiring lives in the top-level ``services`` package.
"""

__version__ = "0.1.0"
