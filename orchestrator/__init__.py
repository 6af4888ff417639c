"""The debate core: specs, engine, providers and the log. Knows nothing of chat platforms."""
