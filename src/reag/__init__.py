"""reag: acceptance testing for LLM-based software, run on live traffic.

The ``reag`` package is the core library, the ground floor: domain logic with no
Kafka in it. The Kafka apps are the top-level ``services`` package, the command
line and the embedded stack the ``shell`` package above them
(docs/architecture.md, "Three floors").
"""

__version__ = "0.1.0"
