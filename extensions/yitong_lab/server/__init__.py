"""The Jupyter server extension: ``/yitong/api/<path>`` forwards to the platform API."""
