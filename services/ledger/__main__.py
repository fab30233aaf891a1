"""``python -m services.ledger``: configured by ``REAG_*`` environment variables."""

from services.kit.app import serve
from services.ledger.main import create_app
from services.ledger.settings import LedgerSettings

settings = LedgerSettings()
serve(create_app(settings), settings)
