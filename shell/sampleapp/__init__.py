"""A small runnable LLM app to test reag on: the example app's prompt behind an OpenAI-style API."""
