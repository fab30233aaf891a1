"""judge-tier1..3: one code base, a tier is configuration (--tier / REAG_TIER, REAG_TIER_MODELS).

Each tier's deployable is its folder, services/judge-tier<N>/ (``tiers``).
"""
