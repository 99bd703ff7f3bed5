"""The Python SDK: log runs trained anywhere to a Tunelab server. Importable without torch."""
