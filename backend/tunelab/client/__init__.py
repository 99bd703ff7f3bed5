"""The Python SDK: log runs trained anywhere to a Tunelab server. Importable without torch.

`tunelab.init(...)` (tunelab.client.run) creates a run; tunelab.client.http is the HTTP layer the SDK and the CLI
share; tunelab.client.callback holds TunelabCallback for transformers' Trainer (it imports transformers).
"""
