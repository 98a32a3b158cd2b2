"""Yitong's hub-side plugins: the VC-aware spawner, its profile picker and the password authenticator."""

__version__ = "0.1.0"
