"""``python -m services.oracle``: configured by ``REAG_*`` environment variables."""

from services.kit.app import serve
from services.oracle.main import create_app
from services.oracle.settings import OracleSettings

settings = OracleSettings()
serve(create_app(settings), settings)
