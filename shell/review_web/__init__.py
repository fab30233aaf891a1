"""``reag review --web``: the shared review queue served as web pages (issue 28).

``auth`` says who a request is (reviewer tokens, CSRF, where the server may
bind), ``app`` serves the pages over ``reag.review``, ``io`` moves abstains from
Kafka into the store's queue and resolved labels back out to
``reag.reviews.v1`` with ``reag review``'s own publishing code.
"""
