"""``python -m services.calibrator``: configured by ``REAG_*`` environment variables."""

from services.calibrator.main import create_app
from services.calibrator.settings import CalibratorSettings
from services.kit.app import serve

settings = CalibratorSettings()
serve(create_app(settings), settings)
