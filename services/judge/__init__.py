"""judge-tier1..3: one code base, a tier is configuration (REAG_TIER, REAG_TIER_MODELS)."""
