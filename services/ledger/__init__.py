"""The ledger service: oracles, verdicts, abstains and reviews in; results out."""
