"""The embedded stack: the processes ``reag up`` runs on one machine."""
