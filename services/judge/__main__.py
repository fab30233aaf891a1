"""``python -m services.judge [--tier N]``: one tier; ``--tier`` or else REAG_TIER (1..3).

Each tier's own folder (services/judge-tier<N>/tier.yaml) runs this with
``--tier N``, so the tier shows in the process list and the pod's command.
"""

from services.judge.main import create_app, settings_from_argv
from services.kit.app import serve

settings = settings_from_argv()
serve(create_app(settings), settings)
