"""Live traffic at the door: redaction, shadow controls, and the ways traffic arrives.

Everything here runs before reag stores, judges, logs or reviews an event, and none
of it calls an LLM: it is what protects users (PII redaction) and the budget
(sampling, rate and spend limits) on the way in.
"""
