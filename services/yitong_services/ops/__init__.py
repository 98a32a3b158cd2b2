"""Operations: the admin console's page models, the cluster dashboard, nodes and their
services' health, cluster and node logs (docs/operations.md)."""
