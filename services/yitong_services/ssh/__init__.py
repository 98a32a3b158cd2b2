"""SSH into one's own notebook servers and running jobs: public keys (``keys``), login names
(``targets``), the gateway (``gateway``) and what it connects to (``notebook``, ``worker``)."""
