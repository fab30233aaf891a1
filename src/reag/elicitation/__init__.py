"""User intention elicitation (REAG 3.1): live profiles onto persona categories, simulated users.

``intentions.intention_from_traffic`` turns one request of the app under test
into an intention; ``synthetic.simulate`` makes requests with simulated users
and the app's own answers, through a target adapter (``targets``).
"""
