"""The training engine: configures and observes transformers/PEFT/TRL. Imports nothing of api, services, db or worker."""
