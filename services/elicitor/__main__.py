"""``python -m services.elicitor``: configured by ``REAG_*`` environment variables."""

from services.elicitor.main import create_app
from services.elicitor.settings import ElicitorSettings
from services.kit.app import serve

settings = ElicitorSettings()
serve(create_app(settings), settings)
