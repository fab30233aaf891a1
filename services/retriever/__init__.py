"""The retriever service: intentions in, interpretations with software context out (REAG 3.2)."""
