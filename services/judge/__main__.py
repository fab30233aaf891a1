"""``python -m services.judge``: one tier, chosen by REAG_TIER (1..3)."""

from services.judge.main import create_app
from services.judge.settings import JudgeSettings
from services.kit.app import serve

settings = JudgeSettings()
serve(create_app(settings), settings)
