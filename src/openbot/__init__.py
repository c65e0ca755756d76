"""OpenBot: a team of LLM bots, their humans and external systems working in shared threads."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
