"""The recorder a production app imports to send its live traffic to reag.

``pip install reag[client]`` gives the core and aiokafka, nothing else: no
FastStream, no llama.cpp, no torch (docs/architecture.md, "Three floors").

```python
from reag.client import Recorder

recorder = Recorder(bootstrap_servers="kafka:9092", app="nutrition")
recorder.record(query=question, response=answer, user_id=user.id, latency_s=elapsed)
```

``record`` returns at once and never raises: the event is redacted and
produced from a background thread, and what happened to it is counted
(``reag_recorder_events_total``).
"""

from reag.client.recorder import ProducerFactory, ProducerLike, Recorder, RecorderStats
from reag.client.wrappers import wrap_openai

__all__ = ["ProducerFactory", "ProducerLike", "Recorder", "RecorderStats", "wrap_openai"]
