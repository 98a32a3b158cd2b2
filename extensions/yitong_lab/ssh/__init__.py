"""SSH into one's notebook servers and jobs: the SDK calls (``sdk``) and the ``ssh`` command
line they make (``command``)."""
