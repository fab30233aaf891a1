"""The ``reag`` command line. Each module registers its own commands on the root app."""
