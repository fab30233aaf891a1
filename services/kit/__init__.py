"""What every reag service shares. See ``services.kit.delivery`` for the delivery rules."""
