"""Kafka I/O that belongs to commands, not to a running service.

The review tool pulls abstains and publishes labels, ``reag calibrate
--labels --publish`` puts thresholds on their topic, ``reag elicit`` and the
demo publish simulated users' traffic. Each is built on ``services.kit`` so
it gets the services' security settings, tracing and metrics.
"""
