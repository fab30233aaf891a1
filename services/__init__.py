"""The reag services: thin FastStream apps over the core library ``reag``.

``services.kit`` holds what every service shares (broker, settings, the
guarded consume decorator, dead letters, telemetry); ``services.<name>``
holds one service each: ``settings.py``, ``handlers.py`` (one router),
``main.py`` (wiring only).
"""
