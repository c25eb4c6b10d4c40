"""llm-model-puller: fills an LLMModel's weights volume from Hugging Face or a URL."""

__version__ = "0.1.0"
