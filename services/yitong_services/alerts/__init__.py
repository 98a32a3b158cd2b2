"""Monitoring and alerts: rules -> Prometheus rule files, routes -> Alertmanager config, history."""
