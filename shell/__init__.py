"""The shell: reag as a person runs it, on top of the core (``reag``) and the services.

Floor three of three. The command line (``shell.cli``), the embedded stack
that runs every process on one machine (``shell.stack``), the demo
(``shell.demo``), the example app under test (``shell.sampleapp``) and the
Kafka I/O that only commands need (``shell.kafka_io``: the review tool's
consumer, calibration's publishing, simulated users' traffic, topic
creation). It may import the core and the services; neither imports it.
"""
