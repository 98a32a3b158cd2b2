"""The model registry: models in a VC, versions backed by dataset versions, metadata, lineage, aliases."""
