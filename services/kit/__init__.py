"""What every reag service shares. See ``consume`` for the delivery rules."""
