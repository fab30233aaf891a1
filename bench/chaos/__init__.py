"""``make chaos``: load and fault runs on the embedded stack with the scripted model."""
