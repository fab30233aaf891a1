"""``python -m services.retriever``: configured by ``REAG_*`` environment variables."""

from services.kit.app import serve
from services.retriever.main import create_app
from services.retriever.settings import RetrieverSettings

settings = RetrieverSettings()
serve(create_app(settings), settings)
