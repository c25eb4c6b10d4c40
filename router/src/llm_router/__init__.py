"""llm-router: one OpenAI-compatible endpoint in front of every LLMModel's server."""
