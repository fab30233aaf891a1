"""The elicitor service: traffic of the app under test in, user intentions out (REAG 3.1)."""
